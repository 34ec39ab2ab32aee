package store

// NamesDelta answers for s itself, by name (see Overlay.NamesDelta): ok,
// with no names, when of is s and s is still at generation gen.
func (s *Store) NamesDelta(of Reader, gen uint64) (names []Name, ok bool) {
	if s == nil || of != Reader(s) {
		return nil, false
	}
	return nil, s.Generation() == gen
}

// NamesDelta compares o with of, a reader that was at generation gen, by
// name: ok when of is o's base Store and it is still at gen, with names
// the one name whose ByName o answers otherwise than the base (the
// object the change adds, replaces or hides): ByName of any other name
// answers as of did at gen. ok is false for any other of, and when the
// base is at another generation.
func (o *Overlay) NamesDelta(of Reader, gen uint64) (names []Name, ok bool) {
	if of != Reader(o.base) || o.base.Generation() != gen {
		return nil, false
	}
	return []Name{{Namespace: o.hide.namespace, Name: o.hide.name}}, true
}

// NamesDelta is its base's (when the base tells, see Overlay.NamesDelta)
// and the names it hides.
func (w *Without) NamesDelta(of Reader, gen uint64) (names []Name, ok bool) {
	b, tells := w.base.(interface {
		NamesDelta(of Reader, gen uint64) ([]Name, bool)
	})
	if !tells {
		return nil, false
	}
	if names, ok = b.NamesDelta(of, gen); !ok {
		return nil, false
	}
	for n := range w.hidden {
		names = append(names, n)
	}
	return names, true
}
