package render

import (
	"sort"

	"github.com/haproxy-template/htc/pkg/render/fragments"
)

// Lazy channels: a render that applies a table's records (10,000 routes,
// one changed) does not emit every reused record's values into channels
// again. The shortcut, and why its channels are a full render's:
//
// A record applied at the next position of the table's order (in order:
// the recording render applied it there, after the same records), or at
// the one after (the record between is skipped: its item changed or is
// gone), adds nothing to the channels; what records that ran emit is kept
// aside with its position. A channel read while every record from the
// table came so, and after the last one that emitted on it when recorded
// (Base.Last), saw the recording render's emissions on it in the same
// order (Base.Entries holds the first value of each key), but the skipped
// records', with those kept aside in between. So a key neither kept aside
// nor skipped is as Base.Entries has it; any other takes the first value
// of the table's records not skipped (Table.FirstEmitters) and those kept
// aside, by position, as first-wins would, or is gone. Records after Last
// never emit on it, so none can emit once it is read. Anything else (a
// record out of order, two skipped in a row, a read before Last, a
// channel the recording render did not read) builds every channel as
// before, from the records applied so far (materialize). The channel
// read is the recording render's with the keys that differ set or gone,
// without copying it (fragments.OverBase), unless a read needs every entry.
// FuzzFragmentsRenderAsInFull compares every render with a full one.

// pendingEmit is an emission kept aside on a lazy channel: pos is the
// render's position in the table's order when it was applied (the table's
// records before pos came first), at its position among the records
// applied, ran whether its fragment ran.
type pendingEmit struct {
	e       fragments.Emission
	pos, at int
	ran     bool
}

// applyEmits applies rec's emits (ran and found as applyFragment's).
func (s *renderState) applyEmits(rec *fragments.Record, ran bool, found int) error {
	if s.frags.lazy {
		switch {
		case !ran && found == s.frags.pos:
			s.frags.pos++ // what it emits is in the table's channels
			return nil
		case !ran && found == s.frags.pos+1:
			// The record before it was not applied (its item changed or
			// is gone): its emits are taken out where they are read.
			s.frags.skipped = append(s.frags.skipped, s.frags.pos)
			s.frags.pos += 2
			return nil
		case ran:
			s.frags.ranAt = append(s.frags.ranAt, s.frags.pos)
			for _, e := range rec.Emits {
				if c := s.frags.channels[e.Channel]; c != nil {
					if err := c.Add(e, s.frags.applied, true); err != nil {
						return err // read already
					}
					continue
				}
				if s.frags.pending == nil {
					s.frags.pending = map[string][]pendingEmit{}
				}
				s.frags.pending[e.Channel] = append(s.frags.pending[e.Channel], pendingEmit{e: e, pos: s.frags.pos, at: s.frags.applied, ran: true})
			}
			return nil
		}
		s.materialize() // a reused record out of order
	}
	for _, e := range rec.Emits {
		if err := s.channel(e.Channel).Add(e, s.frags.applied, ran); err != nil {
			return err
		}
	}
	return nil
}

// readChannel returns the channel name, to be read: with lazy channels,
// built from the table's channel and what was kept aside when it may be
// (see above), else after materialize.
func (s *renderState) readChannel(name string) *fragments.Channel {
	if !s.frags.lazy || s.frags.channels[name] != nil {
		return s.channel(name)
	}
	if b := s.frags.reuse.Channel(name); b != nil && s.frags.pos > b.Last {
		c := s.fromBase(name, b)
		if s.frags.channels == nil {
			s.frags.channels = map[string]*fragments.Channel{}
		}
		s.frags.channels[name] = c
		s.frags.fromTable++
		delete(s.frags.pending, name)
		return c
	}
	s.materialize()
	return s.channel(name)
}

// fromBase builds channel name from b, the recording render's, the
// emissions kept aside for it and the records skipped: the keys either
// emitted take the first value of the table's records applied (those up
// to b.Last not skipped) and of those kept aside, in the order the render
// applied them; a key none of them emits is gone; every other key is as
// b has it.
func (s *renderState) fromBase(name string, b *fragments.Base) *fragments.Channel {
	kept := s.frags.pending[name]
	var keys map[string]bool // the keys kept aside or skipped
	mark := func(k string) {
		if keys == nil {
			keys = map[string]bool{}
		}
		keys[k] = true
	}
	for _, pe := range kept {
		mark(pe.e.Key)
	}
	for _, q := range s.frags.skipped {
		if q > b.Last {
			break // records after Last do not emit on it
		}
		for _, e := range s.frags.reuse.EmitsAt(q) {
			if e.Channel == name {
				mark(e.Key)
			}
		}
	}
	var fresh []string
	var set map[string]any // the keys whose value is not b's
	var gone []string      // the keys of b that are gone
	if len(keys) > 0 {
		// Only keys b holds were emitted by the table's records (b holds
		// every key they emitted on the channel): look for those alone.
		var held map[string]bool
		for k := range keys {
			if _, in := b.Entries[k]; in {
				if held == nil {
					held = map[string]bool{}
				}
				held[k] = true
			}
		}
		var first map[string]fragments.Emitted
		if len(held) > 0 {
			first = s.frags.reuse.FirstEmitters(name, held, b.Last, s.frags.skipped)
		}
		decided := make(map[string]any, len(keys)) // key → its value (absent: gone)
		for k := range keys {
			if e, ok := first[k]; ok {
				decided[k] = e.Value
			}
		}
		fromKept := map[string]bool{}
		for _, pe := range kept {
			k := pe.e.Key
			if fromKept[k] {
				continue
			}
			fromKept[k] = true
			if e, ok := first[k]; ok && e.Pos < pe.pos {
				continue // the table's record came first
			}
			decided[k] = pe.e.Value
			if pe.ran {
				fresh = append(fresh, k)
			}
		}
		for k := range keys {
			v, now := decided[k]
			was, before := b.Entries[k]
			switch {
			case now && (!before || !sameValue(v, was)):
				if set == nil {
					set = map[string]any{}
				}
				set[k] = v
			case !now && before:
				gone = append(gone, k)
			}
		}
	}
	// The channel is b with the keys changed set or gone, read without
	// copying b (fragments.OverBase; b itself when none changed).
	return fragments.OverBase(b, set, gone, s.lastAt(b.Last, kept), fresh)
}

// sameValue reports whether a and b are the same value: equal scalars, or
// the same map or list (by address). Values it cannot compare are not.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && mapPtr(x) == mapPtr(y)
	}
	return false
}

// lastAt is the position among the records this render applied of the
// last one that emitted on a channel whose last emitter in the table was
// at position last, and kept aside kept (when the record at last was
// skipped, the position it would have had: later than the last one, as
// Base.Last may be).
func (s *renderState) lastAt(last int, kept []pendingEmit) int {
	at := -1
	if last >= 0 {
		// The table's records before last came in order or were skipped;
		// those that ran with pos <= last came before the one at last.
		at = last - sort.SearchInts(s.frags.skipped, last) + sort.SearchInts(s.frags.ranAt, last+1)
	}
	if n := len(kept); n > 0 && kept[n-1].at > at {
		at = kept[n-1].at
	}
	return at
}

// materialize ends lazy channels: every channel not read yet is built
// from the records applied so far, in order, as a render without lazy
// channels builds them as it goes (none of them was read, so none
// refuses an emission), and later emits are added as they come.
func (s *renderState) materialize() {
	s.frags.lazy, s.frags.pending = false, nil
	read := make(map[string]bool, len(s.frags.channels))
	for name := range s.frags.channels {
		read[name] = true
	}
	at := 0
	for i := range s.sources.log {
		ev := &s.sources.log[i]
		if ev.kind != evFragment {
			continue
		}
		for _, e := range ev.rec.Emits {
			if !read[e.Channel] {
				_ = s.channel(e.Channel).Add(e, at, ev.ran) // not read: Add cannot fail
			}
		}
		at++
	}
}

// keepChannels keeps, with t (the table this render recorded), the
// channels it read, for the renders that apply t's records.
func (s *renderState) keepChannels(t *fragments.Table) {
	for name, c := range s.frags.channels {
		if c.IsRead() {
			t.KeepChannel(name, c.Base())
		}
	}
}
