package render

import (
	"unsafe"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/store"
)

// When a fragment record may be reused is package fragments' question
// (fragments.Table.Reusable); the render answers it with its stores and
// with which objects render alike.

// reusable returns the record of key, a fragment of template name, when
// this render may apply it (fragments.Table.Reusable; for a carried table,
// only when name's reach is the same in both engines: carry.go).
func (s *renderState) reusable(name string, key []byte) *fragments.Record {
	t := s.frags.reuse
	if t == nil || (s.frags.carried != nil && !s.frags.carried[name]) {
		return nil
	}
	rec, alike := t.Reusable(key, &s.frags.check)
	if alike {
		s.frags.alike++
		if s.frags.recording != nil {
			// A copy made now, which the new table keeps: in its slab,
			// not among this render's garbage (fragments.Slab).
			rec = s.frags.recording.KeepCopy(rec)
		}
	}
	if rec != nil && s.frags.carried != nil {
		s.frags.carriedReused++
	}
	return rec
}

// reuseCheck is what this render tells t's Reusable about itself.
func (s *renderState) reuseCheck(t *fragments.Table, set store.Set) fragments.Check {
	return fragments.Check{Steady: t.SteadyStores(set), Reader: s.reader, Alike: s.alike}
}

// reader returns the render's reader of store key, nil when none.
func (s *renderState) reader(key string) store.Reader {
	if st := s.stores[key]; st != nil && st.r != nil {
		return st.r
	}
	return nil
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
