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
//
// It tells a second document for one object by the object found (its
// store and address: at 10,000 documents, a map of their identities is
// most of what Resolve costs): documents of one apiVersion that name one
// object find the same object in the same store, and the same object in
// the same store names one object. Documents of two apiVersions of one
// group may name one object from two stores; Resolve answers those by
// their identities (resolveByID, the definition).
func Resolve(docs []Document, stores store.Set, apiVersions map[string]string) error {
	return resolve(docs, stores, apiVersions, nil)
}

// found is the object Resolve found for a document, and the key of its
// store.
type found struct {
	key string
	obj *unstructured.Unstructured
}

// resolve is Resolve, setting objs[i] to the object found for docs[i] when
// objs is not nil.
func resolve(docs []Document, stores store.Set, apiVersions map[string]string, objs []*unstructured.Unstructured) error {
	first := make(map[found]int, len(docs))
	versions := map[string]*version{}
	groups := map[string]string{} // group → the one apiVersion of it seen
	var v *version                // the last document's (most are of one apiVersion)
	for i := range docs {
		d := &docs[i]
		if v == nil || v.apiVersion != d.APIVersion {
			var ok bool
			if v, ok = versions[d.APIVersion]; !ok {
				v = newVersion(d.APIVersion, stores, apiVersions)
				versions[d.APIVersion] = v
				if other, seen := groups[v.group]; v.err == nil && seen && other != d.APIVersion {
					return resolveByID(docs, stores, apiVersions, objs)
				}
				groups[v.group] = d.APIVersion
			}
		}
		if v.err != nil {
			return d.bad("apiVersion %q: %v", d.APIVersion, v.err)
		}
		key, obj := v.find(d)
		switch {
		case len(v.cands) == 0:
			return d.bad("no watched resource with writeStatus: true has apiVersion %s", d.APIVersion)
		case key == "":
			return d.bad("the object is not in the watched resources with writeStatus: true")
		}
		f := found{key: key, obj: obj}
		if j, dup := first[f]; dup {
			return d.bad("a second document for the object (the first is document %d)", j)
		}
		first[f] = d.Index
		d.Store, d.ResourceVersion = key, resourceVersion(obj)
		if objs != nil {
			objs[i] = obj
		}
	}
	return nil
}

// resolveByID is Resolve telling a second document for one object by the
// object's identity (group, kind, namespace, name) before looking it up.
func resolveByID(docs []Document, stores store.Set, apiVersions map[string]string, objs []*unstructured.Unstructured) error {
	first := make(map[objectID]int, len(docs))
	versions := map[string]*version{}
	for i := range docs {
		d := &docs[i]
		v, ok := versions[d.APIVersion]
		if !ok {
			v = newVersion(d.APIVersion, stores, apiVersions)
			versions[d.APIVersion] = v
		}
		if v.err != nil {
			return d.bad("apiVersion %q: %v", d.APIVersion, v.err)
		}
		id := objectID{group: v.group, kind: d.Kind, namespace: d.Namespace, name: d.Name}
		if j, dup := first[id]; dup {
			return d.bad("a second document for the object (the first is document %d)", j)
		}
		first[id] = d.Index
		key, obj := v.find(d)
		switch {
		case len(v.cands) == 0:
			return d.bad("no watched resource with writeStatus: true has apiVersion %s", d.APIVersion)
		case key == "":
			return d.bad("the object is not in the watched resources with writeStatus: true")
		}
		d.Store, d.ResourceVersion = key, resourceVersion(obj)
		if objs != nil {
			objs[i] = obj
		}
	}
	return nil
}

// version is an apiVersion as Resolve needs it (documents have few): its
// group, or why it does not parse, and its candidate stores (their keys,
// and the stores, looked up once).
type version struct {
	apiVersion string
	group      string
	err        error
	cands      []string
	readers    []store.Reader
}

func newVersion(apiVersion string, stores store.Set, apiVersions map[string]string) *version {
	gv, err := schema.ParseGroupVersion(apiVersion)
	v := &version{apiVersion: apiVersion, group: gv.Group, err: err, cands: candidates(apiVersion, stores, apiVersions)}
	for _, k := range v.cands {
		v.readers = append(v.readers, stores[k])
	}
	return v
}

// find is findIn(d, stores, v.cands).
func (v *version) find(d *Document) (string, *unstructured.Unstructured) {
	for i, r := range v.readers {
		if obj, ok := r.ByName(d.Namespace, d.Name); ok {
			if kind, _ := obj.Object["kind"].(string); kind == d.Kind {
				return v.cands[i], obj
			}
		}
	}
	return "", nil
}

// bad is the *Error of d with problem format.
func (d *Document) bad(format string, args ...any) error {
	return &Error{Index: d.Index, Line: d.Line, Object: d.Object(), Problem: fmt.Sprintf(format, args...)}
}

// resourceVersion is obj.GetResourceVersion(), without its generic walk.
func resourceVersion(obj *unstructured.Unstructured) string {
	meta, _ := obj.Object["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	return rv
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
