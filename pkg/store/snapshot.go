package store

import (
	"maps"
	"slices"
	"unsafe"
)

// Snapshot returns s with every reader replaced by one that answers, for
// good, what it answers now: the stores under the Set (a Store, an
// Overlay's base, a Without's base) are copied at one moment, with every
// store's lock held at once, so the copies hold a state the stores held
// together. Readers of another kind are kept as they are.
//
// A copy shares the objects and the index structures that never change
// (entries, sorted views) with its store and copies the maps that do: it
// costs a pass over the store's index, not over its objects, and takes
// the stores' read locks only while it copies. A render whose stores were
// written while it read them is rendered again over a Snapshot (package
// render), so that it reads one state.
func (s Set) Snapshot() Set {
	bases := map[*Store]*Store{}
	for _, r := range s {
		collectBases(r, bases)
	}
	order := slices.SortedFunc(maps.Keys(bases), func(a, b *Store) int {
		// Locks are taken in one order (the stores' addresses: the heap
		// does not move) so that two snapshots never wait on each other.
		pa, pb := uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(b))
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	for _, st := range order {
		st.mu.RLock()
	}
	for _, st := range order {
		bases[st] = st.cloneLocked()
	}
	for _, st := range order {
		st.mu.RUnlock()
	}
	out := make(Set, len(s))
	for k, r := range s {
		out[k] = frozen(r, bases)
	}
	return out
}

// collectBases adds the stores r reads to bases.
func collectBases(r Reader, bases map[*Store]*Store) {
	switch x := r.(type) {
	case *Store:
		if x != nil {
			bases[x] = nil
		}
	case *Overlay:
		if x != nil && x.base != nil {
			bases[x.base] = nil
		}
	case *Without:
		if x != nil {
			collectBases(x.base, bases)
		}
	}
}

// frozen returns r reading the copies of its stores (copies: by
// store).
func frozen(r Reader, copies map[*Store]*Store) Reader {
	switch x := r.(type) {
	case *Store:
		if x != nil {
			return copies[x]
		}
	case *Overlay:
		if x != nil && x.base != nil {
			o := &Overlay{base: copies[x.base], hide: x.hide}
			if x.add != nil {
				o.addEntry = *x.add
				o.add = &o.addEntry
			}
			return o
		}
	case *Without:
		if x != nil {
			return &Without{base: frozen(x.base, copies), hidden: x.hidden}
		}
	}
	return r
}

// cloneLocked returns a store holding what s holds, at s's generation,
// that nothing writes. The caller holds s.mu.
func (s *Store) cloneLocked() *Store {
	c := &Store{index: s.index, byID: maps.Clone(s.byID), levels: make([]map[string]*bucket, len(s.levels)), gen: s.gen}
	for l, m := range s.levels {
		cm := make(map[string]*bucket, len(m))
		for k, b := range m {
			cm[k] = b.clone()
		}
		c.levels[l] = cm
	}
	c.snapshot.Store(s.snapshot.Load())
	return c
}

// clone returns a copy of b (its members; its sorted view, immutable, is
// shared). The caller holds the store's lock.
func (b *bucket) clone() *bucket {
	c := &bucket{one: b.one, members: maps.Clone(b.members)}
	c.sorted.Store(b.sorted.Load())
	return c
}
