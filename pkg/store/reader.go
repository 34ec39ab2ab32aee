package store

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Reader is the read-only view templates and validators use. Both *Store and
// *Overlay implement it. Returned objects are shared: callers must not mutate them.
type Reader interface {
	// List returns every object, ordered by index key, then namespace/name.
	// The order is deterministic for the same contents.
	List() []*unstructured.Unstructured
	// Get returns the object whose index keys equal keys (len(keys) must equal
	// the number of index expressions); when several objects share that key,
	// the first in List order. ok is false when there is none.
	Get(keys ...string) (obj *unstructured.Unstructured, ok bool)
	// Fetch returns all objects whose leading index keys equal keys, in List
	// order. Fetch() with no keys is List().
	Fetch(keys ...string) []*unstructured.Unstructured
	// Len is the number of objects.
	Len() int
	// IndexBy returns the index expressions the store is keyed by.
	IndexBy() []string
	// ByName returns the object with this namespace ("" for a
	// cluster-scoped object) and name, whatever its index keys.
	ByName(namespace, name string) (*unstructured.Unstructured, bool)
	// Generation is the generation of the Store the reader reads
	// (Store.Generation; an Overlay's or a Without's is its base's): it
	// moves whenever what the reader answers may have changed. A reader
	// that reads no Store (a fixed one, in tests) has 0.
	Generation() uint64
	// Delta compares the reader with of, a reader that was at generation
	// gen: ok when it reads of's Store and that Store is still at gen, with
	// keys the index keys of the objects it answers otherwise than of
	// (none for of itself; an Overlay of a Store those its change adds and
	// hides): a Get or Fetch whose keys begin none of them answers as of
	// did at gen. ok is false otherwise, and whenever the reader cannot
	// tell.
	Delta(of Reader, gen uint64) (keys [][]string, ok bool)
}

// Operation is the kind of change an Overlay presents.
type Operation string

// The admission operations an Overlay understands.
const (
	// Create adds the proposed object.
	Create Operation = "CREATE"
	// Update replaces the existing object with the same namespace and name.
	Update Operation = "UPDATE"
	// Delete hides the existing object with the same namespace and name.
	Delete Operation = "DELETE"
)

// Change is one proposed change to one store.
type Change struct {
	// Operation is CREATE, UPDATE or DELETE.
	Operation Operation
	// Object is the proposed object (CREATE, UPDATE); for DELETE it may be nil
	// when OldObject names the object.
	Object *unstructured.Unstructured
	// OldObject is the object as stored (UPDATE, DELETE); optional.
	OldObject *unstructured.Unstructured
}
