package render

import (
	"bytes"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// Bounds of what one recorded iteration keeps: the values its key walks
// and its bytes, and the values its snapshots (stored values, outer
// variables) hold. An iteration that would keep more is not recorded: a
// tenant's large value costs each render its size once, not once per
// iteration.
const (
	maxFingerprintNodes = 512
	maxFingerprintBytes = 4 << 10
	maxSnapshotNodes    = 4096
)

// fingerprint is the key of an iteration: its range, the kind of writer, its elements
// and the outer values its body reads as values, and which of them are the
// same map. Render-created maps count by content, other maps (resource
// objects, extraContext) by identity, kept alive by pins. ids numbers the
// render-created maps met, in the order met: a map met again is written
// as its number, and a get whose result is one of them must find the same
// one when replayed. ok is false when a value has no fingerprint. When the
// render does not record, fp is a view of the state's scratch buffer,
// valid until the next call: it is only looked up.
func (s *renderState) fingerprint(mr *memoRange, elems, outer []any, w *boundedWriter) (fp string, pins []any, ids map[unsafe.Pointer]int32, ok bool) {
	// The state's scratch list of maps met by position: an iteration has
	// few outer values and elements, and one runs per element of every
	// loop, so a map per call would be most of a replaying render's garbage.
	s.fpBuf.Reset()
	f := &fingerprinter{s: s, b: &s.fpBuf, first: s.fpFirst[:0], content: s.fpContent[:0], keys: s.fpKeys[:0]}
	if s.recording == nil {
		// Not kept past memoEnter (a recorded frame keeps its own).
		f.ids = s.fpIDs
		clear(f.ids)
	}
	defer func() {
		clear(f.keys[:cap(f.keys)])
		clear(f.content)
		s.fpFirst, s.fpContent, s.fpKeys = f.first[:0], f.content[:0], f.keys[:0]
		if s.recording == nil {
			// A map that numbered many (clearing costs its size) is
			// dropped rather than kept.
			if len(f.ids) > 16 {
				f.ids = nil
			}
			s.fpIDs = f.ids
		}
	}()
	f.num(0, int64(mr.id)) // the range
	if w.scratch {
		f.b.WriteByte('S') // inside include: its output is a value
	} else {
		f.b.WriteByte('M')
	}
	f.num(0, int64(s.depth)) // include's nesting limit
	for i := range len(outer) + len(elems) {
		var v any
		if i < len(outer) {
			v = outer[i]
		} else {
			v = elems[i-len(outer)]
		}
		f.b.WriteByte('|')
		native := i >= len(outer) || mr.native[i]
		m, isMap := v.(map[string]any)
		if !isMap || m == nil {
			f.value(v)
			continue
		}
		p := mapPointer(m)
		if j, seen := f.firstOf(p); seen {
			f.num('a', int64(j))
			if native {
				f.mapContent(m)
			}
			continue
		}
		f.first = append(f.first, firstMap{p: p, i: i})
		if native {
			f.mapContent(m)
			continue
		}
		f.b.WriteByte('j') // read only through journaled functions
		if s.isOwned(m) {
			f.num(0, int64(f.id(p)))
		}
	}
	ok = !f.bad && f.b.Len() <= maxFingerprintBytes
	if s.recording != nil {
		return f.b.String(), f.pins, f.ids, ok // a recorded frame keeps its key
	}
	// Only looked up: a view of the scratch buffer, valid until the next
	// fingerprint.
	return unsafe.String(unsafe.SliceData(f.b.Bytes()), f.b.Len()), f.pins, f.ids, ok
}

// fingerprinter writes one fingerprint.
type fingerprinter struct {
	s       *renderState
	b       *bytes.Buffer            // the state's scratch buffer
	first   []firstMap               // outer values and elements by position
	ids     map[unsafe.Pointer]int32 // render-created maps met (nil until one is)
	content []unsafe.Pointer         // render-created maps written whole (few: a list)
	keys    []string                 // the keys of the maps being written, outermost first
	pins    []any
	nodes   int
	bad     bool
}

// num writes prefix (none when 0) and n in decimal.
func (f *fingerprinter) num(prefix byte, n int64) {
	if prefix != 0 {
		f.b.WriteByte(prefix)
	}
	f.b.Write(strconv.AppendInt(f.b.AvailableBuffer(), n, 10))
}

// firstMap is the first position (outer values, then elements) of a map
// among an iteration's values.
type firstMap struct {
	p unsafe.Pointer
	i int
}

// firstOf returns the first position of the map at p, if met.
func (f *fingerprinter) firstOf(p unsafe.Pointer) (int, bool) {
	for _, m := range f.first {
		if m.p == p {
			return m.i, true
		}
	}
	return 0, false
}

// id returns the number of the render-created map at p, numbering it
// when first met.
func (f *fingerprinter) id(p unsafe.Pointer) int32 {
	id, seen := f.ids[p]
	if !seen {
		if f.ids == nil {
			f.ids = map[unsafe.Pointer]int32{}
		}
		id = int32(len(f.ids))
		f.ids[p] = id
	}
	return id
}

// node counts a value written, and reports whether the fingerprint may
// go on.
func (f *fingerprinter) node() bool {
	if f.nodes++; f.nodes > maxFingerprintNodes || f.bad {
		f.bad = true
		return false
	}
	return true
}

// str writes the string x (a value or a map key).
func (f *fingerprinter) str(x string) {
	if f.b.Len()+len(x) > maxFingerprintBytes {
		f.bad = true
		return
	}
	f.num('s', int64(len(x)))
	f.b.WriteByte(':')
	f.b.WriteString(x)
}

func (f *fingerprinter) value(v any) {
	if !f.node() {
		return
	}
	switch x := v.(type) {
	case nil:
		f.b.WriteByte('n')
	case string:
		f.str(x)
	case bool:
		f.b.WriteString(strconv.FormatBool(x))
	case int:
		f.num('i', int64(x))
	case int64:
		f.num('I', x)
	case float64:
		f.b.WriteByte('F')
		f.b.Write(strconv.AppendFloat(f.b.AvailableBuffer(), x, 'g', -1, 64))
	case map[string]any:
		if x == nil {
			f.b.WriteString("{}")
			return
		}
		f.mapContent(x)
	case []any:
		if x == nil {
			f.b.WriteString("N[")
			return
		}
		f.num('[', int64(len(x)))
		for _, e := range x {
			f.value(e)
		}
		f.b.WriteByte(']')
	case []string:
		if x == nil {
			f.b.WriteString("N<")
			return
		}
		f.num('<', int64(len(x)))
		for _, e := range x {
			f.value(e)
		}
		f.b.WriteByte('>')
	default:
		f.bad = true
	}
}

// mapContent writes a render-created map by number and, the first time
// its content is needed, content; any other map by identity; the render
// context as R and the stores it has.
func (f *fingerprinter) mapContent(m map[string]any) {
	if isRoot(f.s, m) {
		f.b.WriteString(f.s.rootFP)
		return
	}
	p := mapPointer(m)
	o, owned := f.s.owned[p]
	if !owned {
		f.b.WriteByte('p')
		f.b.Write(strconv.AppendUint(f.b.AvailableBuffer(), uint64(uintptr(p)), 16))
		if f.s.recording != nil {
			// Kept by the entry. A key only looked up needs no pin: m is
			// alive, so no entry's pinned map can have its address.
			f.pins = append(f.pins, m)
		}
		return
	}
	f.num('r', int64(f.id(p)))
	if slices.Contains(f.content, p) {
		return
	}
	f.content = append(f.content, p)
	if o.flat != nil && f.s.recording == nil {
		// Rebuilt from a flat snapshot and not modified since: its entries
		// read as they did when the snapshot was taken. (A recording render
		// writes them: it pins the maps they name.)
		f.nodes += o.flat.nodes
		f.b.WriteString(o.flat.entries)
		if f.nodes > maxFingerprintNodes || f.b.Len() > maxFingerprintBytes {
			f.bad = true
		}
		return
	}
	f.entries(m)
}

// entries writes the content of a render-created map: its entries in key
// order.
func (f *fingerprinter) entries(m map[string]any) {
	f.num('{', int64(len(m)))
	// The keys in order, in the scratch list above those of the maps
	// being written around this one (value may write nested maps).
	start := len(f.keys)
	for k := range m {
		f.keys = append(f.keys, k)
	}
	slices.Sort(f.keys[start:])
	for i := start; i < start+len(m); i++ {
		k := f.keys[i]
		if f.node() {
			f.str(k) // as value(k) writes it, without boxing k
		}
		f.value(m[k])
	}
	f.keys = f.keys[:start]
	f.b.WriteByte('}')
}

// rootFingerprint is the fingerprint of a render's context: its stores,
// and which of them are missing (extraContext is the Engine's).
func rootFingerprint(stores store.Set) string {
	var b strings.Builder
	b.WriteByte('R')
	for _, k := range slices.Sorted(maps.Keys(stores)) {
		b.WriteString(strconv.Itoa(len(k)) + ":" + k)
		if stores[k] == nil {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// isRoot reports whether m is the render's context (its dot at the top).
func isRoot(s *renderState, m map[string]any) bool {
	return s.root != nil && mapPointer(m) == mapPointer(s.root)
}

// builtMap and builtList are snapshots of maps and lists the iteration
// built: rebuild makes new render-owned copies of them.
//
// A snapshot of a flat map (every value a scalar, nil, or a map the render
// did not create) also keeps the text fingerprint writes for its entries,
// and how many values that text counts: a map rebuilt from it carries it
// until it is modified (ownedMap), so that a loop over rebuilt maps (a
// range over each of a dict whose values an earlier loop set) does not
// sort and write every one of them again in every render.
type (
	builtMap struct {
		m       map[string]any
		entries string // "" when not flat
		nodes   int
	}
	builtList []any
)

// snapshotter copies the values an iteration stored in shared maps and
// outer variables, as they are when it ends.
type snapshotter struct {
	s     *renderState
	nodes int
	fr    *memoFrame
	seen  map[unsafe.Pointer]bool
	bad   bool
}

func (sn *snapshotter) take(v any) any {
	if sn.nodes++; sn.nodes > maxSnapshotNodes {
		sn.bad = true // too large to keep: the iteration runs each time
		return nil
	}
	switch x := v.(type) {
	case nil, string, bool, int, int64, float64, []string:
		return v
	case map[string]any:
		if x == nil {
			return x
		}
		if isRoot(sn.s, x) {
			sn.bad = true
			return nil
		}
		if !sn.s.isOwned(x) {
			return x // a resource object or extraContext: never modified
		}
		p := mapPointer(x)
		if sn.s.isShared(x, sn.fr) || sn.seen[p] {
			sn.bad = true // it would be two maps when replayed
			return nil
		}
		sn.seen[p] = true
		out := &builtMap{m: make(map[string]any, len(x))}
		flat := true
		for k, e := range x {
			out.m[k] = sn.take(e)
			flat = flat && sn.s.flatValue(e)
		}
		if flat {
			out.entries, out.nodes = sn.s.flatEntries(x)
		}
		return out
	case []any:
		if x == nil {
			return x // sprig's nil list prints as null, an empty one as []
		}
		out := make(builtList, len(x))
		for i, e := range x {
			out[i] = sn.take(e)
		}
		return out
	}
	sn.bad = true
	return nil
}

// flatValue reports whether v may be a value of a flat map (see builtMap):
// its fingerprint is the same in every render.
func (s *renderState) flatValue(v any) bool {
	switch x := v.(type) {
	case nil, string, bool, int, int64, float64:
		return true
	case map[string]any:
		return x == nil || !s.isOwned(x) && !isRoot(s, x)
	}
	return false
}

// flatEntries returns what fingerprint writes for the entries of the flat
// map m and how many values it counts; "" when it would give up.
func (s *renderState) flatEntries(m map[string]any) (string, int) {
	var b bytes.Buffer
	f := &fingerprinter{s: s, b: &b}
	f.entries(m)
	if f.bad {
		return "", 0
	}
	return b.String(), f.nodes
}

// rebuild returns a render-owned copy of a snapshot.
func (s *renderState) rebuild(v any) any {
	switch x := v.(type) {
	case *builtMap:
		m := make(map[string]any, len(x.m))
		for k, e := range x.m {
			m[k] = s.rebuild(e)
		}
		if x.entries == "" {
			return s.own(m)
		}
		s.ownSeq++
		s.owned[mapPointer(m)] = ownedMap{seq: s.ownSeq, flat: x}
		return m
	case builtList:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = s.rebuild(e)
		}
		return l
	}
	return v
}

// sameValue reports whether a and b are the same value: maps and lists by
// identity, floats by their bits, other comparable values by ==.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case *builtMap:
		return false // a snapshot is no value a template holds
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && mapPointer(x) == mapPointer(y)
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && unsafe.SliceData(x) == unsafe.SliceData(y)
	case []string:
		y, ok := b.([]string)
		return ok && len(x) == len(y) && unsafe.SliceData(x) == unsafe.SliceData(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y) // -0 is not 0
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// slot is one key of one map, for a replay's own writes.
type slot struct {
	m   unsafe.Pointer
	key string
}

// written is what a replayed iteration wrote to a slot.
type written struct {
	present bool
	value   any
}

// replayable reports whether entry e can be replayed now: the budgets
// allow it and every read it recorded reads the same in this render.
func (s *renderState) replayable(e *memoEntry, refs []any, w *boundedWriter, ids map[unsafe.Pointer]int32) bool {
	if e.scratch > s.budget.scratch || (!w.scratch && int64(len(e.out))+e.added > s.budget.bundle) {
		return false
	}
	// cur (refs, then the maps gets returned) and first are the state's
	// scratch lists, like fingerprint's.
	c := &replayCheck{s: s, cur: append(s.rcCur[:0], refs...), ids: ids, first: s.rcFirst[:0], own: s.rcOwn, files: s.rcFiles}
	clear(c.own)
	clear(c.files)
	defer func() {
		clear(c.cur)
		s.rcCur, s.rcFirst, s.rcOwn, s.rcFiles = c.cur[:0], c.first[:0], c.own, c.files
	}()
	for i, v := range refs {
		c.note(int32(i), v)
	}
	for i := range e.ops {
		if !c.agrees(&e.ops[i]) {
			return false
		}
	}
	return true
}

// replayCheck is the state of one replayable check: the refs so far (the
// outer values and elements, then the shared maps gets returned), the
// first position of each map among them, the fingerprint's map numbers,
// and the iteration's own writes and added files.
type replayCheck struct {
	s     *renderState
	cur   []any
	first []firstMap
	ids   map[unsafe.Pointer]int32
	own   map[slot]written
	files map[[2]string]string
}

// note records that ref i is v.
func (c *replayCheck) note(i int32, v any) {
	if m, ok := v.(map[string]any); ok && m != nil {
		if _, seen := c.firstOf(mapPointer(m)); !seen {
			c.first = append(c.first, firstMap{p: mapPointer(m), i: int(i)})
		}
	}
}

// firstOf returns the first ref that is the map at p, if any.
func (c *replayCheck) firstOf(p unsafe.Pointer) (int32, bool) {
	for _, m := range c.first {
		if m.p == p {
			return int32(m.i), true
		}
	}
	return 0, false
}

// agrees reports whether op reads now what it read when recorded (and
// records the writes the reads after it see).
func (c *replayCheck) agrees(op *memoOp) bool {
	switch op.kind {
	case opStore:
		return c.s.storeAgrees(op.key, op.val.(*storeRead))
	case opGet, opHasKey:
		return c.readAgrees(op)
	case opSet, opUnset:
		// The replay, if any, modifies m (modifying only forgets what a
		// replay that does not happen would have kept).
		m, ok := refMap(c.cur, op.ref)
		if !ok || !c.s.modifying(m) {
			return false
		}
		if c.own == nil {
			c.own = map[slot]written{}
		}
		c.own[slot{mapPointer(m), op.key}] = written{present: op.kind == opSet, value: op.val}
	case opAddFile:
		af := op.val.(*addedFile)
		name := [2]string{string(af.kind), af.name}
		prev, dup := c.s.added[af.kind][af.name]
		if p, ok := c.files[name]; ok {
			prev, dup = p, true
		}
		if dup && prev != af.text {
			return false
		}
		if c.files == nil {
			c.files = map[[2]string]string{}
		}
		c.files[name] = af.text
	}
	return true
}

// readAgrees reports whether a recorded get or hasKey reads the same now,
// seeing the iteration's own writes; a get whose result was a shared map
// adds it to the refs.
func (c *replayCheck) readAgrees(op *memoOp) bool {
	m, ok := refMap(c.cur, op.ref)
	if !ok {
		return false
	}
	v, present := m[op.key]
	if wr, ok := c.own[slot{mapPointer(m), op.key}]; ok {
		v, present = wr.value, wr.present
	}
	if op.kind == opHasKey {
		return present == op.val.(bool)
	}
	if !present {
		v = ""
	}
	if op.res < 0 {
		return sameValue(v, op.val)
	}
	mv, ok := v.(map[string]any)
	if !ok || mv == nil || !c.s.isOwned(mv) || int(op.res) != len(c.cur) {
		return false
	}
	// The same aliases as when recorded: with the refs before it (outer
	// values, elements, earlier results) and with the maps the body reads
	// as values.
	alias := int32(0)
	if k, seen := c.firstOf(mapPointer(mv)); seen {
		alias = k + 1
	}
	id, inKey := c.ids[mapPointer(mv)]
	if alias != op.alias || (inKey && op.off != id+1) || (!inKey && op.off != 0) {
		return false
	}
	c.note(int32(len(c.cur)), mv)
	c.cur = append(c.cur, mv)
	return true
}

// replaySource replays a source map event of an iteration whose output
// starts at base; opened is, for each element of Each and each still
// running in it, whether it made an object current (innermost last).
func (s *renderState) replaySource(op *memoOp, base int, opened []bool) []bool {
	switch op.kind {
	case opReturned:
		ref, _ := op.val.(*bundle.ObjectRef)
		s.sources.returnedAs(op.key, op.obj, ref)
	case opRef:
		s.sources.ref(op.obj)
	case opPush:
		var ref int32
		if op.obj != nil {
			ref = s.sources.ref(op.obj)
		}
		s.sources.push(ref)
		opened = append(opened, true)
	case opPop:
		s.sources.pop()
		opened = opened[:max(0, len(opened)-1)]
	case opWrote:
		s.sources.wrote(base + int(op.off))
	case opWithin:
		ref := int32(0)
		for _, m := range op.val.([]map[string]any) {
			if ref = s.sources.ref(m); ref != 0 {
				break
			}
		}
		if ref != 0 {
			s.sources.push(ref)
		}
		opened = append(opened, ref != 0)
	case opWithinEnd:
		opened = s.close(opened, len(opened)-1)
	case opTruncate:
		opened = s.close(opened, int(op.alias))
	}
	return opened
}

// close ends the running elements of opened beyond the first keep: those
// that made an object current stop being current.
func (s *renderState) close(opened []bool, keep int) []bool {
	for len(opened) > max(keep, 0) {
		if opened[len(opened)-1] {
			s.sources.pop()
		}
		opened = opened[:len(opened)-1]
	}
	return opened
}

// refMap returns the map of ref i.
func refMap(cur []any, i int32) (map[string]any, bool) {
	if i < 0 || int(i) >= len(cur) {
		return nil, false
	}
	m, ok := cur[i].(map[string]any)
	return m, ok && m != nil
}

// storeAgrees reports whether store key answers the recorded read as it
// did.
func (s *renderState) storeAgrees(key string, sr *storeRead) bool {
	rs := s.stores[key]
	if rs == nil || rs.r == nil {
		return false
	}
	switch sr.method {
	case "Len":
		return rs.r.Len() == sr.n
	case "Get":
		if len(sr.keys) != len(rs.r.IndexBy()) {
			return false // running it fails: want N keys
		}
		if s.storeUnchanged(key, rs.r, sr.keys) {
			return true
		}
		obj, ok := rs.r.Get(sr.keys...)
		if !ok || obj == nil || obj.Object == nil {
			return len(sr.objs) == 0
		}
		return len(sr.objs) == 1 && mapPointer(obj.Object) == mapPointer(sr.objs[0])
	}
	objs := rs.r.List()
	if sr.method == "Fetch" {
		if len(sr.keys) > len(rs.r.IndexBy()) {
			return false
		}
		if s.storeUnchanged(key, rs.r, sr.keys) {
			return true
		}
		objs = rs.r.Fetch(sr.keys...)
	}
	n := 0
	for _, o := range objs {
		if o == nil || o.Object == nil {
			continue
		}
		if n >= len(sr.objs) || mapPointer(o.Object) != mapPointer(sr.objs[n]) {
			return false
		}
		n++
	}
	return n == len(sr.objs)
}

// storeUnchanged reports whether r, store key of this render, answers a
// read of the key prefix keys (Get, or Fetch of a prefix) as the recording
// render's store did, without reading it: it is that store at the same
// generation, or an Overlay of it whose change is not visible at keys.
func (s *renderState) storeUnchanged(key string, r store.Reader, keys []string) bool {
	t := s.table()
	if t == nil {
		return false
	}
	g, ok := t.gens[key]
	if !ok {
		return false
	}
	switch x := r.(type) {
	case *store.Store:
		return x == g.store && x.Generation() == g.gen
	case *store.Overlay:
		return x.Base() == g.store && x.Unchanged(g.gen, keys)
	}
	return false
}

// replay applies entry e: its writes, files, source map events and output.
func (s *renderState) replay(e *memoEntry, refs []any, w *boundedWriter) error {
	s.budget.scratch -= e.scratch
	base := w.Len()
	if !w.scratch {
		if err := s.chargeBundle("", int64(len(e.out))); err != nil {
			return err
		}
	}
	w.Buffer.WriteString(e.out)
	// cur (refs, then the maps gets returned) and opened (the elements of
	// Each and each running, see replaySource) are scratch lists.
	cur := append(s.rpCur[:0], refs...)
	opened := s.rpOpened[:0]
	defer func() {
		clear(cur)
		s.rpCur, s.rpOpened = cur[:0], opened[:0]
	}()
	for i := range e.ops {
		op := &e.ops[i]
		switch op.kind {
		case opGet:
			if op.res >= 0 {
				m, _ := refMap(cur, op.ref)
				cur = append(cur, m[op.key])
			}
		case opSet:
			m, _ := refMap(cur, op.ref)
			m[op.key] = s.rebuild(op.val)
		case opUnset:
			m, _ := refMap(cur, op.ref)
			delete(m, op.key)
		case opAddFile:
			af := op.val.(*addedFile)
			var owner []any
			if af.owner != nil {
				owner = []any{af.owner}
			}
			if _, err := s.addFile(string(af.kind), af.name, af.text, owner...); err != nil {
				return err
			}
		default:
			opened = s.replaySource(op, base, opened)
		}
	}
	return nil
}
