package store

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var benchSizes = []int{100, 1000, 10000}

// benchStores runs fn as a sub-benchmark per base size, named n=<size>.
func benchStores(b *testing.B, fn func(b *testing.B, base *Store, n int)) {
	for _, n := range benchSizes {
		base := ingressBase(b, n)
		base.List() // warm the snapshot, as a live store would be
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			fn(b, base, n)
		})
	}
}

// updateMiddle moves the object in the middle of the base to a new key.
func updateMiddle(n int) Change {
	i := n / 2
	return Change{Operation: Update, Object: ingress(fmt.Sprintf("ns-%02d", i%10), fmt.Sprintf("ing-%06d", i), "x")}
}

func BenchmarkNewOverlay(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		change := updateMiddle(n)
		for b.Loop() {
			if _, err := NewOverlay(base, change); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOverlayList is one admission: a fresh overlay, listed once.
func BenchmarkOverlayList(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		change := Change{Operation: Create, Object: ingress("ns-05", "new", "x")}
		for b.Loop() {
			o, _ := NewOverlay(base, change)
			if len(o.List()) != n+1 {
				b.Fatal("wrong length")
			}
		}
	})
}

// BenchmarkOverlayListCached is a template listing the same overlay again.
func BenchmarkOverlayListCached(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		o, _ := NewOverlay(base, updateMiddle(n))
		o.List()
		for b.Loop() {
			o.List()
		}
	})
}

func BenchmarkOverlayGet(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		o, _ := NewOverlay(base, updateMiddle(n))
		keys := benchKeys(n)
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			o.Get(k[0], k[1])
			i++
		}
	})
}

func BenchmarkStoreGet(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		keys := benchKeys(n)
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			if _, ok := base.Get(k[0], k[1]); !ok {
				b.Fatal("not found")
			}
			i++
		}
	})
}

// BenchmarkStoreFetch fetches one namespace (n/10 objects), cached.
func BenchmarkStoreFetch(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		namespaces := make([]string, 10)
		for i := range namespaces {
			namespaces[i] = fmt.Sprintf("ns-%02d", i)
		}
		i := 0
		for b.Loop() {
			if len(base.Fetch(namespaces[i%10])) != n/10 {
				b.Fatal("wrong length")
			}
			i++
		}
	})
}

// BenchmarkStoreListAfterWrite is an informer event followed by a List:
// the write invalidates the snapshot, which is rebuilt and sorted.
func BenchmarkStoreListAfterWrite(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		objs := [2]*unstructured.Unstructured{ingress("ns-01", "w", "a"), ingress("ns-01", "w", "b")}
		i := 0
		for b.Loop() {
			if err := base.Add(objs[i%2]); err != nil {
				b.Fatal(err)
			}
			if len(base.List()) != n+1 {
				b.Fatal("wrong length")
			}
			i++
		}
	})
}

func benchKeys(n int) [][2]string {
	keys := make([][2]string, 0, 1000)
	for i := 0; i < n && len(keys) < cap(keys); i += max(1, n/cap(keys)) {
		keys = append(keys, [2]string{fmt.Sprintf("ns-%02d", i%10), fmt.Sprintf("ing-%06d", i)})
	}
	return keys
}

// BenchmarkSnapshot is what a torn render pays before it renders again:
// a snapshot of a store and of an Overlay of it.
func BenchmarkSnapshot(b *testing.B) {
	benchStores(b, func(b *testing.B, base *Store, n int) {
		ov, err := NewOverlay(base, updateMiddle(n))
		if err != nil {
			b.Fatal(err)
		}
		set := Set{"plain": base, "overlay": ov}
		for b.Loop() {
			set.Snapshot()
		}
	})
}
