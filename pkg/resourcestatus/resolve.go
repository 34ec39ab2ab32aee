package resourcestatus

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/store"
)

// Resolve finds the store holding each document's object and sets its
// Store and ResourceVersion (the object's, as stores hold it): the first store key, in order, whose watched resource has the
// document's apiVersion (apiVersions: store key → apiVersion, only the
// stores whose watched resource has writeStatus) and holds an object of
// the document's kind, namespace and name. A document whose object is in
// none of those stores, or a second document for one object, is an
// *Error.
func Resolve(docs []Document, stores store.Set, apiVersions map[string]string) error {
	first := make(map[objectID]int, len(docs))
	// By apiVersion (documents have few): its group and candidate stores.
	type version struct {
		group string
		err   error
		cands []string
	}
	versions := map[string]version{}
	for i := range docs {
		d := &docs[i]
		bad := func(format string, args ...any) error {
			return &Error{Index: d.Index, Line: d.Line, Object: d.Object(), Problem: fmt.Sprintf(format, args...)}
		}
		v, ok := versions[d.APIVersion]
		if !ok {
			gv, err := schema.ParseGroupVersion(d.APIVersion)
			v = version{group: gv.Group, err: err, cands: candidates(d.APIVersion, stores, apiVersions)}
			versions[d.APIVersion] = v
		}
		if v.err != nil {
			return bad("apiVersion %q: %v", d.APIVersion, v.err)
		}
		id := objectID{group: v.group, kind: d.Kind, namespace: d.Namespace, name: d.Name}
		if j, dup := first[id]; dup {
			return bad("a second document for the object (the first is document %d)", j)
		}
		first[id] = d.Index
		cands := v.cands
		key, obj := findIn(d, stores, cands)
		switch {
		case len(cands) == 0:
			return bad("no watched resource with writeStatus: true has apiVersion %s", d.APIVersion)
		case key == "":
			return bad("the object is not in the watched resources with writeStatus: true")
		}
		d.Store, d.ResourceVersion = key, obj.GetResourceVersion()
	}
	return nil
}

// Find returns the key of the first store, in key order, whose watched
// resource has d's apiVersion and holds d's object ("" when none does);
// watched reports whether any watched resource has that apiVersion.
func Find(d *Document, stores store.Set, apiVersions map[string]string) (key string, watched bool) {
	cands := candidates(d.APIVersion, stores, apiVersions)
	key, _ = findIn(d, stores, cands)
	return key, len(cands) > 0
}

// candidates are the keys of the stores whose watched resource has
// apiVersion, sorted.
func candidates(apiVersion string, stores store.Set, apiVersions map[string]string) []string {
	var keys []string
	for k, v := range apiVersions {
		if v == apiVersion && stores[k] != nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// findIn returns the first of keys whose store holds an object of d's
// kind, namespace and name, and that object ("", nil if none does).
func findIn(d *Document, stores store.Set, keys []string) (string, *unstructured.Unstructured) {
	for _, k := range keys {
		if obj, ok := stores[k].ByName(d.Namespace, d.Name); ok {
			if kind, _ := obj.Object["kind"].(string); kind == d.Kind {
				return k, obj
			}
		}
	}
	return "", nil
}

// objectID is an object's identity across API versions.
type objectID struct {
	group, kind, namespace, name string
}
