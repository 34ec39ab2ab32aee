package render

import (
	"iter"
	"slices"
	"unsafe"
)

// A rewritten range whose pipeline can be wrapped (see rewriteRange) also
// iterates through htcMemoRange:
//
//	{{ range $x := htcMemoRange ID (PIPELINE) OUTER... }}{{ $v = htcMemoSync ID i $v }}...
//	  {{ if htcMemoEnter ID $x OUTER... }}BODY{{ htcMemoLeave ID ASSIGNED... }}{{ else }}...{{ end }}
//	{{ end }}{{ $v = htcMemoDone ID i $v }}...
//
// The iterator htcMemoRange returns replays, in Go, every iteration it
// can before the template sees it, and hands the template only those that
// must run: text/template's work per element (setting the variables,
// evaluating htcMemoEnter's arguments, calling it through reflect) is
// then spent on the iterations that changed, not on every one. It keeps
// the values of the outer variables the body assigns as they are after
// each iteration (replayed: the entry's finals; run: htcMemoLeave's), and
// the template takes them at the start of each body it runs
// (htcMemoSync) and after the range (htcMemoDone).

// memoLoop is a wrapped range in progress.
type memoLoop struct {
	mr *memoRange
	// vals are the outer variables' values now, by index in mr.outer.
	vals []any
	// elems is the scratch list of an element's values.
	elems []any
}

// memoRange returns seq wrapped for range id, with the outer variables'
// values when the range began. A range that cannot replay (inside an
// iteration that runs, in a render without a table to replay, over a
// value that is not one of the iterators Each and each return) gets seq
// as it is: its iterations go through htcMemoEnter alone.
func (s *renderState) memoRange(id int, seq any, outer ...any) (any, error) {
	s.loopDone = nil
	if id < 0 || id >= len(s.engine.memo) {
		return seq, nil
	}
	mr := s.engine.memo[id]
	if len(s.frames) > 0 || len(outer) != len(mr.outer) || s.noReplay || s.table() == nil {
		return seq, nil // nothing to replay: htcMemoEnter runs (and records) every iteration
	}
	l := &memoLoop{mr: mr, vals: slices.Clone(outer)}
	switch it := seq.(type) {
	case iter.Seq[map[string]any]:
		if mr.elems != 1 {
			return seq, nil
		}
		return iter.Seq[map[string]any](func(yield func(map[string]any) bool) {
			defer s.startLoop(l)()
			for v := range it {
				if !l.replayed(s, v) && !yield(v) {
					return
				}
			}
		}), nil
	case iter.Seq[any]:
		if mr.elems != 1 {
			return seq, nil
		}
		return iter.Seq[any](func(yield func(any) bool) {
			defer s.startLoop(l)()
			for v := range it {
				if !l.replayed(s, v) && !yield(v) {
					return
				}
			}
		}), nil
	case iter.Seq2[string, any]:
		return iter.Seq2[string, any](func(yield func(string, any) bool) {
			defer s.startLoop(l)()
			for k, v := range it {
				var done bool
				if mr.elems == 2 {
					done = l.replayed(s, k, v)
				} else {
					done = l.replayed(s, v)
				}
				if !done && !yield(k, v) {
					return
				}
			}
		}), nil
	}
	return seq, nil
}

// startLoop makes l the innermost running loop and returns what ends it.
func (s *renderState) startLoop(l *memoLoop) (end func()) {
	s.loops = append(s.loops, l)
	depth := len(s.loops)
	return func() {
		clear(s.loops[depth-1:])
		s.loops = s.loops[:depth-1]
		s.loopDone = l
	}
}

// replayed replays the iteration of these elements when it can and
// reports whether it did. When it did not, the template runs it, and
// htcMemoEnter lets it run without looking it up again (or returns the
// error replaying it met).
func (l *memoLoop) replayed(s *renderState, elems ...any) bool {
	s.forceRun, s.pending, s.handed = true, nil, fingerprinted{}
	if err := s.interrupted(); err != nil {
		s.pending = err
		return false
	}
	l.elems = append(l.elems[:0], elems...)
	done, err := s.replayIteration(l.mr, l.elems, l.vals)
	clear(l.elems)
	if done || s.recording == nil {
		s.handed = fingerprinted{} // kept only to be recorded
	}
	if err != nil {
		s.pending = err
		return false
	}
	if !done {
		return false
	}
	s.forceRun = false
	s.looped++
	for _, f := range s.replayed.finals {
		if f.changed {
			l.vals[f.index] = s.rebuild(f.value)
		}
	}
	return true
}

// left takes the values the iteration of range id that just ended left in
// the outer variables it assigns, when it was one a loop handed to the
// template (it ran outermost).
func (s *renderState) left(id int, finals []any) {
	if len(s.frames) > 0 || len(s.loops) == 0 {
		return
	}
	l := s.loops[len(s.loops)-1]
	if l.mr.id != id || len(finals) != len(l.mr.assigned) {
		return
	}
	for j, i := range l.mr.assigned {
		l.vals[i] = finals[j]
	}
}

// memoSync returns, at the start of an iteration of range id that runs,
// the value of its outer variable i after the iterations before it.
func (s *renderState) memoSync(id, i int, current any) (any, error) {
	if n := len(s.loops); n > 0 && len(s.frames) == 0 {
		if l := s.loops[n-1]; l.mr.id == id && i >= 0 && i < len(l.vals) {
			return l.vals[i], nil
		}
	}
	return current, nil
}

// memoDone returns, after range id, the value of its outer variable i
// after its last iteration.
func (s *renderState) memoDone(id, i int, current any) (any, error) {
	if l := s.loopDone; l != nil && len(s.frames) == 0 && l.mr.id == id && i >= 0 && i < len(l.vals) {
		return l.vals[i], nil
	}
	return current, nil
}

// fingerprinted is the fingerprint a loop made of the iteration it hands
// to the template, which htcMemoEnter records it under instead of making
// it again (see fingerprint).
type fingerprinted struct {
	made bool
	fp   string
	pins []any
	ids  map[unsafe.Pointer]int32
	ok   bool
}

// replayIteration replays the iteration of mr with these elements and
// outer values when the table holds one replayable now, and reports
// whether it did.
func (s *renderState) replayIteration(mr *memoRange, elems, outer []any) (bool, error) {
	if s.noReplay {
		return false, nil
	}
	w := s.writer()
	fp, pins, ids, ok := s.fingerprint(mr, elems, outer, w)
	s.handed = fingerprinted{made: true, fp: fp, pins: pins, ids: ids, ok: ok}
	if !ok {
		return false, nil
	}
	key := memoKey(fp)
	e := s.lookup(key)
	if e == nil {
		return false, nil
	}
	return s.tryReplay(e, key, outer, elems, w, ids)
}
