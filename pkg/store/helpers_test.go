package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// newObj builds an object of kind in ns/name with extra top-level fields.
func newObj(kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	content := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}
	for k, v := range fields {
		content[k] = v
	}
	return &unstructured.Unstructured{Object: content}
}

// ingress builds an Ingress with spec.ingressClassName (omitted when "").
func ingress(ns, name, class string) *unstructured.Unstructured {
	spec := map[string]any{}
	if class != "" {
		spec["ingressClassName"] = class
	}
	o := newObj("Ingress", ns, name, map[string]any{"spec": spec})
	o.SetAPIVersion("networking.k8s.io/v1")
	return o
}

// endpointSlice builds an EndpointSlice labelled with its Service's name.
func endpointSlice(ns, name, service string) *unstructured.Unstructured {
	o := newObj("EndpointSlice", ns, name, nil)
	o.SetAPIVersion("discovery.k8s.io/v1")
	o.SetLabels(map[string]string{"kubernetes.io/service-name": service})
	return o
}

const serviceNameLabel = "metadata.labels['kubernetes.io/service-name']"

// names renders objects as "namespace/name" for readable assertions.
func names(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func nameOf(obj *unstructured.Unstructured, ok bool) string {
	if !ok || obj == nil {
		return ""
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func mustStore(t testing.TB, indexBy []string, objs ...*unstructured.Unstructured) *Store {
	t.Helper()
	s, err := New(indexBy)
	require.NoError(t, err)
	for _, o := range objs {
		require.NoError(t, s.Add(o))
	}
	return s
}

// checkConsistent verifies the Reader contract on one state of r: List is
// strictly ordered by keys then namespace/name, Len matches, every Fetch of
// a key prefix is the matching run of List, and Get returns its first
// element. r must not change while this runs.
func checkConsistent(t testing.TB, idx *Index, r Reader) {
	t.Helper()
	list := r.List()
	assert.Equal(t, len(list), r.Len(), "Len")
	entries := make([]*entry, len(list))
	for i, o := range list {
		keys, err := idx.Keys(o)
		require.NoError(t, err)
		entries[i] = newEntry(o, keys)
		if i > 0 {
			assert.Negative(t, compareEntries(entries[i-1], entries[i]), "List order at %d: %v then %v", i, names(list[i-1:i]), names(list[i:i+1]))
		}
	}
	for _, e := range entries {
		for l := 1; l <= len(e.keys); l++ {
			prefix := e.keys[:l]
			var want []string
			for _, o := range entries {
				if hasPrefix(o.keys, prefix) {
					want = append(want, o.id.namespace+"/"+o.id.name)
				}
			}
			assert.Equal(t, want, names(r.Fetch(prefix...)), "Fetch(%q)", prefix)
			if l == len(e.keys) {
				assert.Equal(t, want[0], nameOf(r.Get(prefix...)), "Get(%q)", prefix)
			}
		}
	}
	assert.Equal(t, names(list), names(r.Fetch()), "Fetch()")
}

// sortedIDs reports whether objs are in List order (by idx keys) with
// unique namespace/names; it returns a description of the first problem.
func sortedIDs(idx *Index, objs []*unstructured.Unstructured) error {
	seen := make(map[objID]bool, len(objs))
	var prev *entry
	for _, o := range objs {
		keys, err := idx.Keys(o)
		if err != nil {
			return err
		}
		e := newEntry(o, keys)
		if seen[e.id] {
			return fmt.Errorf("duplicate %v", e.id)
		}
		seen[e.id] = true
		if prev != nil && compareEntries(prev, e) >= 0 {
			return fmt.Errorf("out of order: %v before %v", prev.keys, e.keys)
		}
		prev = e
	}
	return nil
}

func count(objs []*unstructured.Unstructured, ns, name string) int {
	return len(slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool {
		return o.GetNamespace() != ns || o.GetName() != name
	}))
}
