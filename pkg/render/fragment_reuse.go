package render

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// When a fragment record may be reused: the table of the last recording
// render, the stores that stayed at its generations, and the reads a
// record made, made again and compared.

// fragmentTable holds the records of one recording render, by key (name,
// item key and item fingerprint), for the renders with its BaseDir and
// size limit.
type fragmentTable struct {
	baseDir string
	limit   int64
	records map[string]*fragmentRecord
	// gens are the stores (by key) that stayed at one generation from the
	// start of the recording render to its end: every read it made of them
	// returned what that generation holds.
	gens map[string]storeGen
}

// storeGen is a reader at a generation.
type storeGen struct {
	reader store.Reader
	gen    uint64
}

// storeGens returns the generation of each reader of set that answers as
// the Store it reads (a Store itself: Delta of itself at its generation,
// with no keys); a reader that presents a change of its Store (an Overlay)
// answered otherwise for the keys it changes, which a later render could
// not tell from its own.
func storeGens(set store.Set) map[string]storeGen {
	gens := make(map[string]storeGen, len(set))
	for k, r := range set {
		if r == nil {
			continue
		}
		gen := r.Generation()
		if keys, ok := r.Delta(r, gen); ok && len(keys) == 0 {
			gens[k] = storeGen{reader: r, gen: gen}
		}
	}
	return gens
}

// keepSteady drops the stores whose generation moved since storeGens.
func (t *fragmentTable) keepSteady() {
	for k, g := range t.gens {
		if g.reader.Generation() != g.gen {
			delete(t.gens, k)
		}
	}
}

// steadyStores returns, for each store of set still at the generation t
// recorded, the index keys whose reads may answer otherwise now: none for
// the store itself, those an Overlay of it changes (store.Reader.Delta).
// A read of any other store is checked by making it again.
func (t *fragmentTable) steadyStores(set store.Set) map[string][][]string {
	steady := make(map[string][][]string, len(t.gens))
	for k, g := range t.gens {
		if r := set[k]; r != nil {
			if keys, ok := r.Delta(g.reader, g.gen); ok {
				steady[k] = keys
			}
		}
	}
	return steady
}

// reusable returns the record of key when this render may apply it: every
// store read it made returns the same objects now.
func (s *renderState) reusable(key []byte) *fragmentRecord {
	t := s.frags.reuse
	if t == nil {
		return nil
	}
	rec := t.records[string(key)]
	if rec == nil {
		return nil
	}
	for i := range rec.reads {
		if !s.readsAlike(&rec.reads[i]) {
			return nil
		}
	}
	return rec
}

// readsAlike reports whether r, made now, returns what it returned: the
// store is steady and the read is not of keys an overlay changes, or it is
// made again and returns the same objects.
func (s *renderState) readsAlike(r *fragmentRead) bool {
	if delta, steady := s.frags.steady[r.store]; steady {
		if len(delta) == 0 {
			return true
		}
		if m := r.read.method; (m == "Get" || m == "Fetch") && len(r.read.keys) > 0 &&
			!slices.ContainsFunc(delta, func(k []string) bool { return hasKeyPrefix(k, r.read.keys) }) {
			return true
		}
	}
	st := s.stores[r.store]
	return st != nil && st.r != nil && r.read.same(st.r)
}

// hasKeyPrefix reports whether keys begins with prefix.
func hasKeyPrefix(keys, prefix []string) bool {
	return len(prefix) <= len(keys) && slices.Equal(keys[:len(prefix)], prefix)
}

// same reports whether the read r, made on rd again, returns the same
// objects (by identity: store objects never change) or the same count.
func (r *storeRead) same(rd store.Reader) bool {
	switch r.method {
	case "Get":
		obj, ok := rd.Get(r.keys...)
		if !ok || obj == nil || obj.Object == nil {
			return len(r.objs) == 0
		}
		return len(r.objs) == 1 && mapPtr(obj.Object) == mapPtr(r.objs[0])
	case "Fetch":
		return sameObjects(rd.Fetch(r.keys...), r.objs)
	case "List":
		return sameObjects(rd.List(), r.objs)
	case "Len":
		return rd.Len() == r.n
	}
	return false
}

// sameObjects reports whether got holds the objects of want, in order.
func sameObjects(got []*unstructured.Unstructured, want []map[string]any) bool {
	i := 0
	for _, o := range got {
		if o == nil || o.Object == nil {
			continue // contents skips these too
		}
		if i == len(want) || mapPtr(o.Object) != mapPtr(want[i]) {
			return false
		}
		i++
	}
	return i == len(want)
}

// refsOf names the objects a Get or Fetch returned (nil for List and Len,
// whose objects the source map does not name).
func refsOf(key string, r storeRead) []bundle.ObjectRef {
	if r.method != "Get" && r.method != "Fetch" {
		return nil
	}
	refs := make([]bundle.ObjectRef, len(r.objs))
	for i, o := range r.objs {
		refs[i] = refOf(key, o)
	}
	return refs
}
