package store

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reads is everything a reader answers, as text.
func reads(r Reader) string {
	one, ok := r.Get("a", "x")
	byName, okName := r.ByName("b", "y")
	return fmt.Sprintf("list %v fetch-a %v fetch-b %v get %s byname %s len %d gen %d",
		names(r.List()), names(r.Fetch("a")), names(r.Fetch("b")), nameOf(one, ok), nameOf(byName, okName), r.Len(), r.(interface{ Generation() uint64 }).Generation())
}

func TestASnapshotAnswersAsItsStoresDidWhenItWasTaken(t *testing.T) {
	nsName := []string{"metadata.namespace", "metadata.name"}
	base := mustStore(t, nsName, ingress("a", "x", ""), ingress("a", "z", ""), ingress("b", "y", ""))
	other := mustStore(t, nsName, ingress("c", "w", ""))
	ov, err := NewOverlay(base, Change{Operation: Create, Object: ingress("b", "new", "")})
	require.NoError(t, err)
	set := Set{"plain": base, "overlay": ov, "without": NewWithout(base, Name{Namespace: "a", Name: "z"}), "other": other}
	before := map[string]string{}
	for k, r := range set {
		before[k] = reads(r)
	}

	snap := set.Snapshot()
	require.NoError(t, base.Update(ingress("a", "x", "changed")))
	require.NoError(t, base.Add(ingress("a", "added", "")))
	base.DeleteByName("b", "y")
	require.NoError(t, other.Replace(nil))

	for k, r := range snap {
		assert.Equal(t, before[k], reads(r), "%s: the snapshot answers as the store did", k)
		assert.NotEqual(t, before[k], reads(set[k]), "%s: the store moved on", k)
		checkConsistent(t, base.index, r)
	}
	assert.IsType(t, &Store{}, snap["plain"], "a snapshot of a Store is a Store (an Overlay can be made of it)")
	assert.Same(t, snap["plain"], snap["overlay"].(*Overlay).Base(), "one copy of a store under several readers")
}

func TestASnapshotTakenWhileTheStoresAreWrittenIsOneMomentOfThem(t *testing.T) {
	nsName := []string{"metadata.namespace", "metadata.name"}
	a, b := mustStore(t, nsName), mustStore(t, nsName)
	set := Set{"a": a, "b": b}
	// A writer adds the same object to a, then to b, holding both locks
	// in turn: a snapshot holds as many objects in b as in a, or one
	// fewer (taken between the two writes), never more.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 300 {
			o := ingress("ns", fmt.Sprint("o", i), "")
			require.NoError(t, a.Add(o))
			require.NoError(t, b.Add(o))
		}
	}()
	for range 300 {
		s := set.Snapshot()
		na, nb := s["a"].Len(), s["b"].Len()
		assert.True(t, nb == na || nb == na-1, "a has %d objects and b %d", na, nb)
	}
	wg.Wait()
}

// unknownReader is a Reader of no kind Snapshot knows.
type unknownReader struct{ *Store }

func TestASnapshotKeepsReadersItDoesNotKnow(t *testing.T) {
	r := unknownReader{mustStore(t, []string{"metadata.name"})}
	assert.Equal(t, Reader(r), Set{"r": r}.Snapshot()["r"])
	var nilStore *Store
	assert.NotPanics(t, func() { Set{"nil": nilStore, "none": nil}.Snapshot() })
}
