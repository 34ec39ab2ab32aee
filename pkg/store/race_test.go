package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestConcurrentWritersAndOverlays runs writers changing the base while
// readers build overlays and check each result they get for internal
// consistency. Run it with -race.
func TestConcurrentWritersAndOverlays(t *testing.T) {
	const (
		writers, readers = 4, 4
		iterations       = 300
		nameCount        = 40
	)
	base, err := New(byClass)
	if err != nil {
		t.Fatal(err)
	}
	classes := []string{"a", "b", "c"}
	random := func(rng *rand.Rand) *unstructured.Unstructured {
		return ingress(fmt.Sprintf("ns%d", rng.IntN(3)), fmt.Sprintf("n%02d", rng.IntN(nameCount)), classes[rng.IntN(len(classes))])
	}
	set := Set{"ingresses": base}

	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < iterations; i++ {
				obj := random(rng)
				switch rng.IntN(10) {
				case 0:
					objs := make([]*unstructured.Unstructured, rng.IntN(30))
					for j := range objs {
						objs[j] = random(rng)
					}
					assert.NoError(t, base.Replace(objs))
				case 1, 2, 3:
					base.DeleteByName(obj.GetNamespace(), obj.GetName())
				default:
					assert.NoError(t, base.Add(obj))
				}
				base.List() // readers of the base rebuild caches concurrently too
				base.Fetch(obj.GetNamespace())
				base.Get(obj.GetNamespace(), obj.GetName())
			}
		}(uint64(w))
	}
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 2))
			for i := 0; i < iterations; i++ {
				obj := random(rng)
				op := []Operation{Create, Update, Delete}[rng.IntN(3)]
				resources, err := set.WithChange("ingresses", Change{Operation: op, Object: obj})
				if !assert.NoError(t, err) {
					return
				}
				checkOverlayRead(t, base.index, resources["ingresses"], op, obj, classes)
			}
		}(uint64(100 + r))
	}
	wg.Wait()
	assert.NoError(t, sortedIDs(base.index, base.List()))
}

// checkOverlayRead checks what each single read of r returns: every call
// must be consistent in itself even though the base changes between calls.
func checkOverlayRead(t *testing.T, idx *Index, r Reader, op Operation, obj *unstructured.Unstructured, classes []string) {
	ns, name := obj.GetNamespace(), obj.GetName()
	list := r.List()
	assert.NoError(t, sortedIDs(idx, list))
	want := 1
	if op == Delete {
		want = 0
	}
	assert.Equal(t, want, count(list, ns, name), "%s %s/%s in List", op, ns, name)
	if want == 1 {
		assert.Contains(t, list, obj, "the proposed object itself")
	}
	fetched := r.Fetch(ns)
	assert.NoError(t, sortedIDs(idx, fetched))
	for _, o := range fetched {
		assert.Equal(t, ns, o.GetNamespace())
	}
	assert.Equal(t, want, count(fetched, ns, name))
	for _, class := range classes {
		got, ok := r.Get(ns, class)
		if ok {
			assert.Equal(t, class, got.Object["spec"].(map[string]any)["ingressClassName"])
		}
		if op != Delete && class == obj.Object["spec"].(map[string]any)["ingressClassName"] {
			assert.True(t, ok, "the proposed object's key resolves")
		}
	}
	assert.GreaterOrEqual(t, r.Len(), want)
}
