package render

import (
	"slices"
	"unsafe"

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
// store read it made returns the same objects now, or objects that render
// alike (see readsAlike); the record returned then holds the objects read
// now.
func (s *renderState) reusable(key []byte) *fragmentRecord {
	t := s.frags.reuse
	if t == nil {
		return nil
	}
	rec := t.records[string(key)]
	if rec == nil {
		return nil
	}
	var fresh *fragmentRecord // rec with the objects read now, once one differs
	for i := range rec.reads {
		ok, now := s.readsAlike(&rec.reads[i])
		if !ok {
			return nil
		}
		if now != nil {
			if fresh == nil {
				c := *rec
				c.reads = slices.Clone(rec.reads)
				fresh = &c
			}
			fresh.reads[i].read.objs = now
		}
	}
	if fresh == nil {
		return rec
	}
	if rec.holdsReplaced(fresh) {
		return nil
	}
	s.frags.alike++
	return fresh
}

// readsAlike reports whether r, made now, returns what it returned: the
// store is steady and the read is not of keys an overlay changes, or it is
// made again and returns the same objects (now nil), or objects that render
// alike (now: those objects).
func (s *renderState) readsAlike(r *fragmentRead) (ok bool, now []map[string]any) {
	if delta, steady := s.frags.steady[r.store]; steady {
		if len(delta) == 0 {
			return true, nil
		}
		if m := r.read.method; (m == "Get" || m == "Fetch") && len(r.read.keys) > 0 &&
			!slices.ContainsFunc(delta, func(k []string) bool { return hasKeyPrefix(k, r.read.keys) }) {
			return true, nil
		}
	}
	st := s.stores[r.store]
	if st == nil || st.r == nil {
		return false, nil
	}
	return r.read.again(st.r, s, r.store)
}

// Objects that render alike. A store object that changed only in fields no
// template reads (a Gateway whose status the controller wrote: status is
// not read, reads.Set) is another object, so a record that read the old
// one would run again though it would do exactly what it did. A read
// whose objects are each the recorded one, or one that names the same
// object (kind, namespace, name: the source map names it so) and agrees
// with it on every field the templates read (reads.Set.Same: what
// admission's read-set skip rests on), returns what the fragment saw; the
// record is applied with the objects read now (so the source map and
// later reads see the stores' objects), unless its emitted values or
// added files hold one of the objects replaced (a full render would hold
// the new one): then it runs again. Input.ExactReads turns this off.

// alike reports whether now renders as old, an object of store key the
// record read, does: see above. Answers are kept for the render.
func (s *renderState) alike(key string, old, now map[string]any) bool {
	if s.frags.exact {
		return false
	}
	k := [2]unsafe.Pointer{mapPtr(old), mapPtr(now)}
	if v, ok := s.frags.alikeSeen[k]; ok {
		return v
	}
	v := refOf(key, old) == refOf(key, now) && s.engine.reads.Same(key, old, now)
	if s.frags.alikeSeen == nil {
		s.frags.alikeSeen = map[[2]unsafe.Pointer]bool{}
	}
	s.frags.alikeSeen[k] = v
	return v
}

// holdsReplaced reports whether rec's emitted values or added files'
// owners hold an object of rec's reads that fresh (rec with the objects
// read now) does not read.
func (rec *fragmentRecord) holdsReplaced(fresh *fragmentRecord) bool {
	var replaced []unsafe.Pointer
	for i := range rec.reads {
		for j, o := range rec.reads[i].read.objs {
			if p := mapPtr(o); p != mapPtr(fresh.reads[i].read.objs[j]) {
				replaced = append(replaced, p)
			}
		}
	}
	for _, p := range rec.held {
		if slices.Contains(replaced, p) {
			return true
		}
	}
	for _, f := range rec.files {
		if f.owner != nil && slices.Contains(replaced, mapPtr(f.owner)) {
			return true
		}
	}
	return false
}

// hasKeyPrefix reports whether keys begins with prefix.
func hasKeyPrefix(keys, prefix []string) bool {
	return len(prefix) <= len(keys) && slices.Equal(keys[:len(prefix)], prefix)
}

// again makes the read r on rd again and compares what it returns with
// what it returned: the same objects (by identity: store objects never
// change) or the same count (ok, now nil); objects each the recorded one
// or alike it (s.alike, by store key; ok, now: the objects it returns);
// otherwise not ok.
func (r *storeRead) again(rd store.Reader, s *renderState, key string) (ok bool, now []map[string]any) {
	switch r.method {
	case "Get":
		obj, found := rd.Get(r.keys...)
		if !found || obj == nil || obj.Object == nil {
			return len(r.objs) == 0, nil
		}
		switch {
		case len(r.objs) != 1:
			return false, nil
		case mapPtr(obj.Object) == mapPtr(r.objs[0]):
			return true, nil
		case s.alike(key, r.objs[0], obj.Object):
			return true, []map[string]any{obj.Object}
		}
		return false, nil
	case "Fetch":
		return sameObjects(rd.Fetch(r.keys...), r.objs, s, key)
	case "List":
		return sameObjects(rd.List(), r.objs, s, key)
	case "Len":
		return rd.Len() == r.n, nil
	}
	return false, nil
}

// sameObjects compares got with the objects want, in order: each the
// same object (ok, now nil) or alike it (ok, now: got's objects).
func sameObjects(got []*unstructured.Unstructured, want []map[string]any, s *renderState, key string) (ok bool, now []map[string]any) {
	i := 0
	for _, o := range got {
		if o == nil || o.Object == nil {
			continue // contents skips these too
		}
		if i == len(want) {
			return false, nil
		}
		if mapPtr(o.Object) != mapPtr(want[i]) {
			if !s.alike(key, want[i], o.Object) {
				return false, nil
			}
			if now == nil {
				now = append(make([]map[string]any, 0, len(want)), want[:i]...)
			}
		}
		if now != nil {
			now = append(now, o.Object)
		}
		i++
	}
	return i == len(want), now
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
