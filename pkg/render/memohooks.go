package render

import "github.com/haproxy-template/htc/pkg/bundle"

// This file holds what the functions and stores record while an iteration
// is recorded (see memo.go).

// isShared reports whether m is a render-created map that existed before
// frame fr's iteration began.
func (s *renderState) isShared(m map[string]any, fr *memoFrame) bool {
	o, ok := s.owned[mapPointer(m)]
	return ok && o.seq <= fr.watermark
}

// get is sprig's get (the value of key in d, "" when absent), journaled.
func (s *renderState) get(d map[string]any, key string) any {
	v, ok := d[key]
	if !ok {
		v = ""
	}
	if fr := s.recordingFrame(); fr != nil {
		fr.read(s, opGet, d, key, v, ok)
	}
	return v
}

// hasKey is sprig's hasKey (whether d has key), journaled.
func (s *renderState) hasKey(d map[string]any, key string) bool {
	_, ok := d[key]
	if fr := s.recordingFrame(); fr != nil {
		fr.read(s, opHasKey, d, key, nil, ok)
	}
	return ok
}

// read records a get or hasKey of d.
func (fr *memoFrame) read(s *renderState, kind opKind, d map[string]any, key string, v any, present bool) {
	if d == nil {
		return
	}
	ref, known := fr.refs[mapPointer(d)]
	if !known {
		if s.isShared(d, fr) {
			fr.bad = true // a shared map reached some other way
		}
		return
	}
	op := memoOp{kind: kind, ref: ref, key: key, res: -1}
	if kind == opHasKey {
		op.val = present
		fr.add(op)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		switch {
		case x != nil && s.isOwned(x):
			if !s.isShared(x, fr) {
				fr.bad = true // a map this iteration built: it would be a copy
				return
			}
			p := mapPointer(x)
			if first, ok := fr.refs[p]; ok {
				op.alias = first + 1
			} else {
				fr.refs[p] = fr.nrefs
			}
			if id, ok := fr.ids[p]; ok {
				op.off = id + 1
			}
			op.res = fr.nrefs
			fr.nrefs++
		case x != nil && isRoot(s, x):
			fr.bad = true
			return
		default:
			op.val = x
		}
	case nil, string, bool, int, int64, float64:
		op.val = v
	default:
		fr.bad = true
		return
	}
	fr.add(op)
}

// wroteShared records a set or unset of d.
func (s *renderState) wroteShared(kind opKind, d map[string]any, key string, value any) {
	fr := s.recordingFrame()
	if fr == nil {
		return
	}
	ref, known := fr.refs[mapPointer(d)]
	if !known {
		if s.isShared(d, fr) {
			fr.bad = true
		}
		return
	}
	if kind == opSet {
		fr.sets = append(fr.sets, len(fr.entry.ops))
	}
	fr.add(memoOp{kind: kind, ref: ref, key: key, val: value, res: -1})
}

// mergedShared leaves the iteration unrecorded: merge may modify maps
// nested anywhere in its destination.
func (s *renderState) mergedShared() {
	if fr := s.recordingFrame(); fr != nil {
		fr.bad = true
	}
}

// recordAddFile records an addFile call and stops the source map from
// recording what the call does (the replay calls addFile again).
func (s *renderState) recordAddFile(kind bundle.Kind, name, text string, owner []any) (resume func()) {
	fr := s.recordingFrame()
	if fr == nil {
		return func() {}
	}
	af := &addedFile{kind: kind, name: name, text: text}
	if len(owner) > 0 {
		if obj, ok := objectContent(owner[0]); ok {
			af.owner = obj
		}
	}
	fr.add(memoOp{kind: opAddFile, val: af, res: -1})
	fr.entry.added += int64(len(text))
	saved := s.sources.rec
	s.sources.rec = nil
	return func() { s.sources.rec = saved }
}

// recordStore records a store read while an iteration is recorded.
func (t *tracker) recordStore(key string, sr *storeRead) {
	if t != nil && t.rec != nil {
		t.rec.add(memoOp{kind: opStore, key: key, val: sr, res: -1})
	}
}

// note records a source map event while an iteration is recorded.
func (t *tracker) note(kind opKind, key string, obj map[string]any, off int) {
	if t.rec == nil {
		return
	}
	switch kind {
	case opWrote:
		// Only the first write after the current object changed can
		// start a span; later ones are no-ops whatever came before.
		if t.rec.wrote {
			return
		}
		t.rec.wrote = true
	case opPush, opPop:
		t.rec.wrote = false
	}
	op := memoOp{kind: kind, key: key, obj: obj, res: -1}
	switch kind {
	case opWrote:
		op.off = int32(off - t.rec.off0)
	case opReturned:
		// The replay names the object without reading it: objects
		// replayed are mostly cold in the cache, and the four lookups of
		// refOf were a sixth of a replaying render.
		ref := refOf(key, obj)
		op.val = &ref
	}
	t.rec.add(op)
}

// readAdded leaves the iteration being recorded unrecorded: it read which
// files earlier iterations added (pathFor of a name no template renders),
// which a replay does not check.
func (s *renderState) readAdded() {
	if fr := s.recordingFrame(); fr != nil {
		fr.bad = true
	}
}
