package resourcestatus

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/store"
)

// Resolve finds the store holding each document's object and sets its
// Store: the first store key, in order, whose watched resource has the
// document's apiVersion (apiVersions: store key → apiVersion, only the
// stores whose watched resource has writeStatus) and holds an object of
// the document's kind, namespace and name. A document whose object is in
// none of those stores, or a second document for one object, is an
// *Error.
func Resolve(docs []Document, stores store.Set, apiVersions map[string]string) error {
	first := make(map[objectID]int, len(docs))
	for i := range docs {
		d := &docs[i]
		bad := func(format string, args ...any) error {
			return &Error{Index: d.Index, Line: d.Line, Object: d.Object(), Problem: fmt.Sprintf(format, args...)}
		}
		gv, err := schema.ParseGroupVersion(d.APIVersion)
		if err != nil {
			return bad("apiVersion %q: %v", d.APIVersion, err)
		}
		id := objectID{group: gv.Group, kind: d.Kind, namespace: d.Namespace, name: d.Name}
		if j, dup := first[id]; dup {
			return bad("a second document for the object (the first is document %d)", j)
		}
		first[id] = d.Index
		key, watched := Find(d, stores, apiVersions)
		switch {
		case !watched:
			return bad("no watched resource with writeStatus: true has apiVersion %s", d.APIVersion)
		case key == "":
			return bad("the object is not in the watched resources with writeStatus: true")
		}
		d.Store = key
	}
	return nil
}

// Find returns the key of the first store, in key order, whose watched
// resource has d's apiVersion and holds d's object ("" when none does);
// watched reports whether any watched resource has that apiVersion.
func Find(d *Document, stores store.Set, apiVersions map[string]string) (key string, watched bool) {
	keys := make([]string, 0, len(apiVersions))
	for k, v := range apiVersions {
		if v == d.APIVersion && stores[k] != nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if obj, ok := stores[k].ByName(d.Namespace, d.Name); ok && obj.GetKind() == d.Kind {
			return k, true
		}
	}
	return "", len(keys) > 0
}

// objectID is an object's identity across API versions.
type objectID struct {
	group, kind, namespace, name string
}
