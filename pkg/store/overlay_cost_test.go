package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ingressBase returns a store of n Ingresses over 10 namespaces, indexed by
// namespace and name.
func ingressBase(t testing.TB, n int) *Store {
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = ingress(fmt.Sprintf("ns-%02d", i%10), fmt.Sprintf("ing-%06d", i), "haproxy")
	}
	s, err := New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	require.NoError(t, s.Replace(objs))
	return s
}

func TestNewOverlayDoesNotCopyTheBase(t *testing.T) {
	changes := map[string]Change{
		"create": {Operation: Create, Object: ingress("ns-03", "brand-new", "haproxy")},
		"update": {Operation: Update, Object: ingress("ns-03", "ing-000003", "other")},
		"delete": {Operation: Delete, OldObject: ingress("ns-03", "ing-000003", "haproxy")},
	}
	small, large := ingressBase(t, 10), ingressBase(t, 10000)
	small.List()
	large.List()
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			allocs := func(base *Store) float64 {
				return testing.AllocsPerRun(100, func() {
					if _, err := NewOverlay(base, change); err != nil {
						t.Fatal(err)
					}
				})
			}
			a10, a10k := allocs(small), allocs(large)
			assert.Equal(t, a10, a10k, "NewOverlay cost must not depend on the base size")
			assert.LessOrEqual(t, a10k, 5.0)
		})
	}
}

// deepSnapshot records a store's contents: the object pointers in List
// order and a deep copy of each object.
type deepSnapshot struct {
	ptrs   []*unstructured.Unstructured
	copies []*unstructured.Unstructured
	fetch  map[string][]*unstructured.Unstructured
}

func snapshotOf(s *Store) deepSnapshot {
	snap := deepSnapshot{fetch: map[string][]*unstructured.Unstructured{}}
	for _, o := range s.List() {
		snap.ptrs = append(snap.ptrs, o)
		snap.copies = append(snap.copies, o.DeepCopy())
		snap.fetch[o.GetNamespace()] = append([]*unstructured.Unstructured(nil), s.Fetch(o.GetNamespace())...)
	}
	return snap
}

func (snap deepSnapshot) assertSame(t *testing.T, s *Store) {
	t.Helper()
	list := s.List()
	require.Len(t, list, len(snap.ptrs))
	for i, o := range list {
		assert.Same(t, snap.ptrs[i], o, "object %d replaced", i)
		assert.Equal(t, snap.copies[i].Object, o.Object, "object %d mutated", i)
	}
	for ns, want := range snap.fetch {
		assert.Equal(t, names(want), names(s.Fetch(ns)))
	}
	assert.Equal(t, len(snap.ptrs), s.Len())
}

func TestOverlaysNeverMutateTheBase(t *testing.T) {
	base := ingressBase(t, 50)
	proposed := ingress("ns-01", "ing-000001", "moved")
	proposedCopy := proposed.DeepCopy()
	snap := snapshotOf(base)
	changes := []Change{
		{Operation: Create, Object: ingress("ns-00", "aaa", "haproxy")},
		{Operation: Create, Object: ingress("ns-02", "ing-000002", "replaced")},
		{Operation: Update, Object: proposed},
		{Operation: Update, Object: ingress("ns-09", "zzz", "haproxy")},
		{Operation: Delete, Object: ingress("ns-04", "ing-000004", "")},
		{Operation: Delete, OldObject: ingress("ns-05", "ing-000015", "")},
	}
	for _, change := range changes {
		o, err := NewOverlay(base, change)
		require.NoError(t, err)
		for round := 0; round < 2; round++ { // cold, then cached
			list := o.List()
			for _, obj := range list { // read every result
				_ = obj.GetName()
				_, _, _ = unstructured.NestedString(obj.Object, "spec", "ingressClassName")
			}
			_ = append(list, ingress("x", "x", "x")) // appending must not write into shared memory
			for _, ns := range []string{"ns-00", "ns-01", "ns-04", "ns-05", "ns-09"} {
				_ = append(o.Fetch(ns), ingress("x", "x", "x"))
				o.Get(ns, "ing-000001")
			}
			o.Get("ns-01", "ing-000001")
			o.Len()
			checkConsistent(t, base.index, o)
		}
		snap.assertSame(t, base)
	}
	assert.Equal(t, proposedCopy.Object, proposed.Object, "the proposed object is not mutated either")
}

func TestSetWithChange(t *testing.T) {
	ingresses, services := overlayBase(t), mustStore(t, []string{"metadata.namespace", "metadata.name"})
	set := Set{"ingresses": ingresses, "services": services}

	out, err := set.WithChange("ingresses", Change{Operation: Delete, Object: ingress("ns1", "a", "")})
	require.NoError(t, err)
	require.Len(t, out, 2)
	assert.Same(t, services, out["services"], "other stores are the same readers")
	ov, ok := out["ingresses"].(*Overlay)
	require.True(t, ok)
	assert.Same(t, ingresses, ov.base, "the overlay reads the actual store")
	assert.Same(t, ingresses, set["ingresses"], "the original set is untouched")
	assert.Equal(t, []string{"ns1/b", "ns2/c"}, names(out["ingresses"].List()))

	_, err = set.WithChange("endpoints", Change{Operation: Delete, Object: ingress("a", "b", "")})
	assert.EqualError(t, err, `no store "endpoints" (stores: ingresses, services)`)
	_, err = out.WithChange("ingresses", Change{Operation: Delete, Object: ingress("a", "b", "")})
	assert.EqualError(t, err, `store "ingresses" is a *store.Overlay, not a *store.Store`)
	_, err = set.WithChange("services", Change{Operation: Create})
	assert.EqualError(t, err, `store "services": overlay: CREATE without an object`)
}
