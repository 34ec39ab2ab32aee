package render

import (
	"slices"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// Incremental rendering: the iterations of a range over
// .resources.<key>.Each or each are recorded by the renders of the live
// state (Input.Record) and replayed by later renders, instead of running
// the body again, when nothing they depend on changed.
//
// An iteration depends on its element, on the outer variables its body
// reads as values (both part of its key, compared by content, resource
// objects by identity), on the store reads it made and on what it read of
// shared maps (maps built before it, reached through outer variables) with
// get and hasKey. Its effects are its output, its writes to shared maps
// (set, unset), the files it added, its source map events and the values
// it left in outer variables. New (planMemo) only rewrites ranges whose
// bodies use shared maps in no other way; at run time anything else
// (merge into a shared map, a shared map reached another way, a value that
// cannot be copied) leaves the iteration unrecorded.
//
// A replay first checks every recorded read against the current render
// (store reads by object identity, get and hasKey by value, seeing the
// iteration's own earlier writes) and the budgets; only then does it apply
// the effects. Anything that differs runs the body instead.

// memoTable holds the recorded iterations of one render.
type memoTable struct {
	baseDir string
	limit   int64 // the bundle limit (what one value may be)
	entries map[memoKey]*memoEntry
	// gens are the stores the recording render read at one generation
	// from its start to its end, by store key: every store read of every
	// entry is what that store answers at that generation (see
	// storeUnchanged).
	gens map[string]storeGen
}

// storeGen is a store at a generation.
type storeGen struct {
	store *store.Store
	gen   uint64
}

// storeGens returns the generations of the stores of set that are
// *store.Store.
func storeGens(set store.Set) map[string]storeGen {
	gens := make(map[string]storeGen, len(set))
	for k, r := range set {
		if st, ok := r.(*store.Store); ok && st != nil {
			gens[k] = storeGen{store: st, gen: st.Generation()}
		}
	}
	return gens
}

// keepSteady drops from t.gens the stores whose generation moved since
// it was taken: a write during the render may have changed what some
// reads returned.
func (t *memoTable) keepSteady() {
	for k, g := range t.gens {
		if g.store.Generation() != g.gen {
			delete(t.gens, k)
		}
	}
}

// memoKey identifies an iteration: the fingerprint of its element and of
// the outer values its body reads, which begins with its range's id. A
// plain string: the table's lookups take the runtime's string-key path.
type memoKey string

// memoEntry is one recorded iteration.
type memoEntry struct {
	ops []memoOp
	// out is what the body wrote; scratch what it charged to the scratch
	// budget; added the bytes of the files it added.
	out     string
	scratch int64
	added   int64
	// finals are the values the body left in the outer variables it
	// assigned (by index in memoRange.outer).
	finals []memoFinal
	// pins keeps alive the maps whose addresses the fingerprint holds, so
	// that no other map can take their address.
	pins []any
}

// memoFinal is an outer variable's value after the iteration.
type memoFinal struct {
	index   int
	changed bool
	value   any // a snapshot (see snapshot)
}

// opKind is the kind of a recorded operation.
type opKind uint8

const (
	opStore     opKind = iota // a store read (val: *storeRead)
	opGet                     // get on a shared map (val: result; res: ref of a shared map result)
	opHasKey                  // hasKey on a shared map (val: bool)
	opSet                     // set on a shared map (val: snapshot)
	opUnset                   // unset on a shared map
	opAddFile                 // addFile (val: *addedFile)
	opReturned                // source map: a store returned obj (key: store; val: its *bundle.ObjectRef)
	opRef                     // source map: obj was referred to
	opPush                    // source map: obj became current
	opPop                     // source map: the current object ended
	opWrote                   // source map: output written at off
	opWithin                  // each made an element current (val: candidates)
	opWithinEnd               // the element's body ended (val: whether it pushed)
	opTruncate                // a break left loops (alias: their elements still running, from the iteration's)
)

// memoOp is one recorded operation of an iteration.
type memoOp struct {
	kind opKind
	ref  int32 // the shared map (index in the frame's refs)
	res  int32 // for opGet: the ref its result became, -1 if none
	// off is, for opWrote, the offset from the iteration's first byte; for
	// opGet, 1 + the fingerprint number of its result map (0: none).
	off int32
	// alias is, for opGet, 1 + the position of the first earlier ref its
	// result map is (0: none).
	alias int32
	key   string
	obj   map[string]any // for source map events
	val   any
}

// storeRead is a recorded store read and its result.
type storeRead struct {
	method string // "List", "Get", "Fetch", "Len"
	keys   []string
	objs   []map[string]any
	n      int
}

// addedFile is a recorded addFile call.
type addedFile struct {
	kind  bundle.Kind
	name  string
	text  string
	owner map[string]any
}

// memoFrame is an iteration being recorded (or run without recording).
type memoFrame struct {
	rng    *memoRange
	record bool
	bad    bool // something the entry cannot replay happened
	key    memoKey
	entry  *memoEntry
	// refs maps the shared maps the body may reach to their index; ref
	// indexes below len(outer)+elems are the outer values and elements.
	refs      map[unsafe.Pointer]int32
	nrefs     int32
	ids       map[unsafe.Pointer]int32 // the fingerprint's map numbers
	watermark uint32                   // maps owned with a lower sequence are shared
	initial   []any
	w         *boundedWriter
	off0      int
	scratch0  int64
	// sets are the values of the opSet operations (snapshot at the end).
	sets []int
	// wrote reports that an opWrote was recorded since the current object
	// last changed.
	wrote bool
	// depth0 is how many objects were current when the iteration began;
	// extraScratch what its appends in place would have charged more had
	// they copied (see replay).
	opened0      int // elements of Each and each running when the iteration began
	extraScratch int64
}

// memoEnter is called at the start of every iteration of a rewritten
// range with its id, element values and outer values. It replays the
// iteration and returns false when it can; else it returns true and the
// body runs (recorded when the render records).
func (s *renderState) memoEnter(id int, args ...any) (bool, error) {
	// A loop (memoloop.go) that handed the iteration to the template
	// failed to replay it, or met an error doing so.
	force, pending, handed := s.forceRun, s.pending, s.handed
	s.forceRun, s.pending, s.handed = false, nil, fingerprinted{}
	if pending != nil {
		return false, pending
	}
	if err := s.interrupted(); err != nil {
		return false, err
	}
	if id < 0 || id >= len(s.engine.memo) {
		return true, nil
	}
	mr := s.engine.memo[id]
	if len(s.frames) > 0 || len(args) != mr.elems+len(mr.outer) {
		s.frames = append(s.frames, &memoFrame{rng: mr})
		return true, nil
	}
	if s.recording == nil && (s.noReplay || s.table() == nil || force) {
		if force {
			s.ran++
		}
		s.frames = append(s.frames, &memoFrame{rng: mr})
		return true, nil
	}
	outer, elems := args[mr.elems:], args[:mr.elems]
	w := s.writer()
	var fp string
	var pins []any
	var ids map[unsafe.Pointer]int32
	var ok bool
	if force && handed.made {
		// The loop's fingerprint of these same values.
		fp, pins, ids, ok = handed.fp, handed.pins, handed.ids, handed.ok
	} else {
		fp, pins, ids, ok = s.fingerprint(mr, elems, outer, w)
	}
	if !ok {
		s.frames = append(s.frames, &memoFrame{rng: mr, w: w, initial: outer})
		return true, nil
	}
	key := memoKey(fp)
	if e := s.lookup(key); e != nil && !s.noReplay && !force {
		if replayed, err := s.tryReplay(e, key, outer, elems, w, ids); replayed || err != nil {
			return false, err
		}
	}
	s.ran++
	fr := &memoFrame{rng: mr, record: s.recording != nil, w: w, initial: outer}
	if !fr.record {
		s.frames = append(s.frames, fr)
		return true, nil
	}
	fr.key, fr.ids = key, ids
	s.startRecording(fr, append(append([]any{}, outer...), elems...), pins)
	return true, nil
}

// tryReplay replays entry e, recorded under key, when it is replayable
// with these outer values and elements, and reports whether it did.
func (s *renderState) tryReplay(e *memoEntry, key memoKey, outer, elems []any, w *boundedWriter, ids map[unsafe.Pointer]int32) (bool, error) {
	// The refs (outer values, then elements) in the state's scratch list:
	// replayable and replay only read them, and keep nothing of them.
	refs := append(append(s.refs[:0], outer...), elems...)
	s.refs = refs
	defer clear(refs) // keeps nothing alive past the call
	if !s.replayable(e, refs, w, ids) {
		return false, nil
	}
	if err := s.replay(e, refs, w); err != nil {
		return false, err
	}
	if s.recording != nil {
		s.recording.entries[key] = e
	}
	s.replayed = e
	s.replays++
	return true, nil
}

// startRecording starts recording frame fr, whose refs are the outer
// values and elements (their maps, by first position).
func (s *renderState) startRecording(fr *memoFrame, refs, pins []any) {
	fr.refs = map[unsafe.Pointer]int32{}
	for i, v := range refs {
		if m, ok := v.(map[string]any); ok && m != nil {
			if _, dup := fr.refs[mapPointer(m)]; !dup {
				fr.refs[mapPointer(m)] = int32(i)
			}
		}
	}
	fr.nrefs = int32(len(refs))
	fr.watermark = s.ownSeq
	fr.off0 = fr.w.Len()
	fr.scratch0 = s.budget.scratch
	fr.opened0 = s.sources.opened
	fr.entry = &memoEntry{pins: pins}
	s.frames = append(s.frames, fr)
	s.sources.rec = fr
}

// memoLeave ends the iteration memoEnter let run; finals are the values of
// the outer variables the body assigns.
func (s *renderState) memoLeave(id int, finals ...any) (string, error) {
	if len(s.frames) == 0 {
		return "", nil
	}
	fr := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	if len(s.frames) == 0 {
		s.sources.rec = nil
	}
	s.left(id, finals)
	if !fr.record || fr.bad || fr.rng.id != id || len(finals) != len(fr.rng.assigned) {
		return "", nil
	}
	if e := s.finish(fr, finals); e != nil {
		s.recording.entries[fr.key] = e
	}
	return "", nil
}

// memoOut returns the value the replayed iteration left in outer variable
// i of its range, or current when it did not change it.
func (s *renderState) memoOut(id, i int, current any) (any, error) {
	e := s.replayed
	if e == nil {
		return current, nil
	}
	for _, f := range e.finals {
		if f.index == i && f.changed {
			return s.rebuild(f.value), nil
		}
	}
	return current, nil
}

// lookup returns the recorded iteration of key, nil when there is none.
func (s *renderState) lookup(key memoKey) *memoEntry {
	if t := s.table(); t != nil {
		return t.entries[key]
	}
	return nil
}

// table is the recorded iterations this render may replay, nil when none:
// the table recorded last when the render began (one table for the whole
// render: storeUnchanged trusts the generations of the table its entries
// come from).
func (s *renderState) table() *memoTable {
	return s.replayFrom
}

// replayTable is the engine's table a render with this base directory and
// bundle limit may replay, nil when none.
func (e *Engine) replayTable(baseDir string, limit int64) *memoTable {
	t := e.table.Load()
	if t == nil || t.baseDir != baseDir || t.limit != limit {
		return nil
	}
	return t
}

// writer is the writer the executing template writes to.
func (s *renderState) writer() *boundedWriter {
	return s.writers[len(s.writers)-1]
}

// finish turns a recorded frame into an entry, nil when a value cannot be
// copied for replay.
func (s *renderState) finish(fr *memoFrame, finals []any) *memoEntry {
	e := fr.entry
	e.ops = slices.Clone(e.ops) // without append's spare capacity: the table lives on
	e.out = string(fr.w.Bytes()[fr.off0:])
	e.scratch = fr.scratch0 - s.budget.scratch + fr.extraScratch
	snap := &snapshotter{s: s, fr: fr, seen: map[unsafe.Pointer]bool{}}
	for _, i := range fr.sets {
		e.ops[i].val = snap.take(e.ops[i].val)
	}
	for j, idx := range fr.rng.assigned {
		f := memoFinal{index: idx, changed: !sameValue(fr.initial[idx], finals[j])}
		if f.changed {
			f.value = snap.take(finals[j])
		}
		e.finals = append(e.finals, f)
	}
	if snap.bad {
		return nil
	}
	return e
}

// memoFuncs are the functions rewritten ranges call, bound to s.
func memoFuncs(s *renderState) map[string]any {
	return map[string]any{memoEnterFunc: s.memoEnter, memoLeaveFunc: s.memoLeave, memoOutFunc: s.memoOut,
		memoRangeFunc: s.memoRange, memoSyncFunc: s.memoSync, memoDoneFunc: s.memoDone}
}

// add appends an operation to the frame being recorded.
func (fr *memoFrame) add(op memoOp) {
	fr.entry.ops = append(fr.entry.ops, op)
}

// recordingFrame is the frame recording now, nil when none.
func (s *renderState) recordingFrame() *memoFrame {
	if len(s.frames) == 0 {
		return nil
	}
	fr := s.frames[0]
	if !fr.record || fr.bad {
		return nil
	}
	return fr
}

// MemoStats counts the iterations of memoized ranges renders replayed and
// ran (see Input.Record).
type MemoStats struct {
	Replayed, Ran int64
	// Confirmed counts renders that replayed and then rendered again
	// without replays (they failed, or came near the scratch limit).
	Confirmed int64
}

// MemoStats returns how many iterations this Engine's renders replayed
// and ran since it was created.
func (e *Engine) MemoStats() MemoStats {
	return MemoStats{Replayed: e.replayed.Load(), Ran: e.ran.Load(), Confirmed: e.confirmed.Load()}
}

// IncrementalLoops reports how many of the templates' loops over stores
// (ranges over .resources.<key>.Each or each) a render can replay
// iteration by iteration, of how many: the others always run in full.
func (e *Engine) IncrementalLoops() (replayable, loops int) {
	return len(e.memo), e.loops
}
