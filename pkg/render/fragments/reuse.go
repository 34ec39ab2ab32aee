package fragments

import (
	"maps"
	"slices"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// When a fragment record may be reused: the table of the last recording
// render, the stores that stayed at its generations, and the reads a
// record made, made again and compared.

// Table holds the records of one recording render, by key (AppendKey),
// for the renders with its BaseDir and size limit.
type Table struct {
	// BaseDir and Limit are the recording render's Input.BaseDir and size
	// limit: only a render with both the same may apply its records.
	BaseDir string
	Limit   int64
	// Records are the records, by key.
	Records map[string]*Record
	// keys are the keys Add recorded, in order, and at where each record
	// was applied; order is each key with its record in Records, made by
	// End (nil before: Reusable then asks Records alone).
	keys  []string
	at    []Place
	order []keyed
	// channels are the channels the recording render read, by name
	// (KeepChannel): a render applying these records starts from them
	// (Base).
	channels map[string]*Base
	// gens are the stores (by key) that stayed at one generation from the
	// start of the recording render to its end: every read it made of them
	// returned what that generation holds.
	gens map[string]storeGen
	// slab holds the records Keep kept (slab.go).
	slab *Slab
	// captured holds the texts Keep kept until End settles them (settle):
	// copies of the render's captures, in chunks apart from its garbage,
	// garbage from End on.
	captured Slab
	// keyText holds the keys Add recorded: apart from slab, whose
	// records a later table copies (settle), they go with t (every table
	// records a key for each of its records).
	keyText Slab
	// firsts holds, by channel, the position of each key's first emitter
	// (*firstIndex, FirstEmitters), for the channels renders asked.
	firsts sync.Map
}

// NewTable returns an empty table for a render with baseDir and limit
// over set, with room for n records.
func NewTable(baseDir string, limit int64, set store.Set, n int) *Table {
	return &Table{BaseDir: baseDir, Limit: limit, gens: storeGens(set), Records: make(map[string]*Record, n), keys: make([]string, 0, n), slab: &Slab{}}
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

// keyed is a key of a table and its record.
type keyed struct {
	key string
	rec *Record
}

// Place is where the render applying a record wrote its text: at byte
// Off of its output Out (End's outputs), or, Out -1, elsewhere (in the
// text a function captures).
type Place struct{ Out, Off int }

// Add records rec as the record of key (a later one for the same key
// replaces it), applied at at.
func (t *Table) Add(key []byte, rec *Record, at Place) {
	k := t.keyText.String(unsafe.String(unsafe.SliceData(key), len(key)))
	t.Records[k] = rec
	t.keys = append(t.keys, k)
	t.at = append(t.at, at)
}

// Keep returns r, a record a fragment of the recording render ran into,
// kept in t's slab with a copy of text as its text (Slab.Keep; the copy
// in t.captured until End settles it): what the render adds to t.
func (t *Table) Keep(r *Record, text []byte) *Record {
	return t.slab.Keep(r, t.captured.String(unsafe.String(unsafe.SliceData(text), len(text))))
}

// KeepCopy returns a copy of r, a record of an earlier table applied
// with the objects read now (Reusable's alike answer, made among the
// render's garbage), kept in t's slab like the records Keep keeps.
func (t *Table) KeepCopy(r *Record) *Record {
	return t.slab.Keep(r, r.Text)
}

// KeepChannel keeps b, the channel name as the recording render read it,
// for the renders that apply t's records.
func (t *Table) KeepChannel(name string, b *Base) {
	if t.channels == nil {
		t.channels = map[string]*Base{}
	}
	t.channels[name] = b
}

// Channel returns the channel name as the recording render read it
// (KeepChannel), nil when it did not (or t is nil).
func (t *Table) Channel(name string) *Base {
	if t == nil {
		return nil
	}
	return t.channels[name]
}

// Emitted is an emission's value and the position in a table's order of
// the record that emitted it.
type Emitted struct {
	Pos   int
	Value any
}

// FirstEmitters returns, for each of keys, the first emission of it on
// channel by the records of t's order up to position upto, but for those
// at the positions skip holds (in increasing order); a key none of them
// emitted is absent.
//
// The shortcut: the position of the first record of t's order that emits
// each key on channel (firstPositions, made once per channel asked: t's
// order never changes after End) answers for a key whose first emitter
// is not skipped and at most upto: no record before it emits the key, so
// the scan would find it there first (its first emit of the key). A key
// no record emits is absent. Any other key (its first emitter skipped or
// past upto: an update or delete of that record) is scanned for as
// before. TestFirstEmittersAnswerAsTheScan compares it with the scan.
func (t *Table) FirstEmitters(channel string, keys map[string]bool, upto int, skip []int) map[string]Emitted {
	first := make(map[string]Emitted, len(keys))
	pos := t.firstPositions(channel)
	var rest map[string]bool
	for k := range keys {
		i, emitted := pos[k]
		if !emitted {
			continue
		}
		if _, skipped := slices.BinarySearch(skip, i); i <= upto && !skipped {
			for _, e := range t.order[i].rec.Emits {
				if e.Channel == channel && e.Key == k {
					first[k] = Emitted{Pos: i, Value: e.Value}
					break
				}
			}
			continue
		}
		if rest == nil {
			rest = map[string]bool{}
		}
		rest[k] = true
	}
	if len(rest) > 0 {
		maps.Copy(first, t.scanFirstEmitters(channel, rest, upto, skip))
	}
	return first
}

// firstPositions returns, for each key emitted on channel, the position
// of the first record of t's order that emits it (made on the first call
// for channel, then shared: t's order does not change after End).
func (t *Table) firstPositions(channel string) map[string]int {
	v, _ := t.firsts.LoadOrStore(channel, &firstIndex{})
	fi := v.(*firstIndex)
	fi.once.Do(func() {
		fi.pos = map[string]int{}
		for i, o := range t.order {
			for _, e := range o.rec.Emits {
				if _, seen := fi.pos[e.Key]; !seen && e.Channel == channel {
					fi.pos[e.Key] = i
				}
			}
		}
	})
	return fi.pos
}

// firstIndex is firstPositions' answer for one channel.
type firstIndex struct {
	once sync.Once
	pos  map[string]int
}

// scanFirstEmitters is FirstEmitters by a scan of t's order.
func (t *Table) scanFirstEmitters(channel string, keys map[string]bool, upto int, skip []int) map[string]Emitted {
	first := make(map[string]Emitted, len(keys))
	for i := 0; i <= upto && i < len(t.order) && len(first) < len(keys); i++ {
		if len(skip) > 0 && skip[0] == i {
			skip = skip[1:]
			continue
		}
		for _, e := range t.order[i].rec.Emits {
			if e.Channel != channel || !keys[e.Key] {
				continue
			}
			if _, seen := first[e.Key]; !seen {
				first[e.Key] = Emitted{Pos: i, Value: e.Value}
			}
		}
	}
	return first
}

// EmitsAt returns the emits of the record at position i of t's order.
func (t *Table) EmitsAt(i int) []Emission { return t.order[i].rec.Emits }

// End drops the stores whose generation moved since NewTable, makes
// every record of t one of t's slab (settle; outputs are the texts of the
// render's outputs by Place.Out, "" for one none keeps),
// and orders the records as Add recorded them: the recording render ends
// with it. It returns the copies, by the record copied (nil: none), for
// the render to hold them instead.
func (t *Table) End(outputs []string) (moved map[*Record]*Record) {
	for k, g := range t.gens {
		if g.reader.Generation() != g.gen {
			delete(t.gens, k)
		}
	}
	moved = t.settle(outputs)
	t.order = make([]keyed, len(t.keys))
	for i, k := range t.keys {
		t.order[i] = keyed{key: k, rec: t.Records[k]}
	}
	t.keys, t.at, t.captured = nil, nil, Slab{}
	return moved
}

// settle copies into t's slab every record t holds of another slab (an
// earlier table's, reused; one of no slab stays as it is), and gives each record of t's slab its text
// for good: the bytes of the output where the render wrote it (at) when
// they are its text, else a copy in t's slab. A record of t's slab is
// t's alone until End returns (no other render reads it), so it is
// settled in place; another slab's record may be read by other renders
// and is left as it is. Then t holds no chunk of an earlier slab, nor a
// second copy of a text the bundle holds: the earlier chunks are kept
// only by what else holds their records (an earlier table, the bundle of
// the render that made it; not the render that made t, once it holds the
// copies: End). The text compared is the whole of it, so a record whose
// text is not where at says gets a copy (fail closed).
func (t *Table) settle(outputs []string) (moved map[*Record]*Record) {
	done := make(map[*Record]bool, len(t.Records))
	for i, k := range t.keys {
		r := t.Records[k]
		if c := moved[r]; c != nil {
			t.Records[k] = c
			continue
		}
		if done[r] || r.slab == nil { // a record of no slab: no chunk to let go
			continue
		}
		text, placed := placedText(outputs, t.at[i], r.Text)
		if !placed {
			text = t.slab.String(r.Text)
		}
		if r.slab == t.slab {
			r.Text = text
			done[r] = true
			continue
		}
		if moved == nil {
			moved = map[*Record]*Record{}
		}
		c := t.slab.Keep(r, text)
		moved[r], done[c], t.Records[k] = c, true, c
	}
	return moved
}

// placedText returns the bytes of outputs at at when they are text (not
// empty).
func placedText(outputs []string, at Place, text string) (string, bool) {
	if at.Out < 0 || at.Out >= len(outputs) || at.Off < 0 || text == "" {
		return "", false
	}
	o := outputs[at.Out]
	if end := at.Off + len(text); end <= len(o) && o[at.Off:end] == text {
		return o[at.Off:end], true
	}
	return "", false
}

// record returns Records[key]. A render of a state like the recorded one
// asks for the keys in the order they were recorded, so it first compares
// key with the key after the last one found in that order (c.next) and
// the one after it (an item added or changed, then one gone): a map
// lookup at every fragment is most of what a reused record costs at
// 10,000 items. order[i].rec is Records[order[i].key] (End), so the answer
// is Records' either way.
func (t *Table) record(key []byte, c *Check) *Record {
	c.Found = -1
	for i := c.next; i < len(t.order) && i <= c.next+1; i++ {
		if t.order[i].key == string(key) {
			c.next, c.Found = i+1, i
			return t.order[i].rec
		}
	}
	return t.Records[string(key)]
}

// SteadyStores returns, for each store of set still at the generation t
// recorded, the index keys whose reads may answer otherwise now: none for
// the store itself, those an Overlay of it changes (store.Reader.Delta).
// A read of any other store is checked by making it again.
func (t *Table) SteadyStores(set store.Set) map[string][][]string {
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

// Check is what a render tells Reusable about itself.
type Check struct {
	// Steady is the table's SteadyStores of the render's stores.
	Steady map[string][][]string
	// Reader returns the render's reader of store key, nil when none.
	Reader func(key string) store.Reader
	// Alike reports whether now, an object of store key, renders as old,
	// one a record read, does (objects that render alike).
	Alike func(key string, old, now map[string]any) bool
	// Found is the position in the table's order of the record the last
	// Reusable found there, -1 when it found none or found it by its key
	// alone (Table.record).
	Found int
	// next is the position in the table's order after the last record
	// found there (Table.record).
	next int
}

// Reusable returns the record of key when the render c describes may
// apply it: every store read it made returns the same objects now, or
// objects that render alike (c.Alike); the record returned then holds the
// objects read now, and alike is true. It returns nil when the record
// must run again: a read returns other objects, or its emitted values or
// added files hold an object replaced by an alike one (a full render would
// hold the new one).
func (t *Table) Reusable(key []byte, c *Check) (rec *Record, alike bool) {
	if rec = t.record(key, c); rec == nil {
		return nil, false
	}
	var fresh *Record // rec with the objects read now, once one differs
	for i := range rec.Reads {
		ok, now := c.readsAlike(&rec.Reads[i])
		if !ok {
			return nil, false
		}
		if now != nil {
			if fresh == nil {
				c := *rec
				c.Reads = slices.Clone(rec.Reads)
				fresh = &c
			}
			fresh.Reads[i].Call.Objs = now
		}
	}
	if fresh == nil {
		return rec, false
	}
	if rec.holdsReplaced(fresh) {
		return nil, false
	}
	return fresh, true
}

// readsAlike reports whether r, made now, returns what it returned: the
// store is steady and the read is not of keys an overlay changes, or it is
// made again and returns the same objects (now nil), or objects that render
// alike (now: those objects).
func (c *Check) readsAlike(r *Read) (ok bool, now []map[string]any) {
	if delta, steady := c.Steady[r.Store]; steady {
		if len(delta) == 0 {
			return true, nil
		}
		if m := r.Call.Method; (m == "Get" || m == "Fetch") && len(r.Call.Keys) > 0 &&
			!slices.ContainsFunc(delta, func(k []string) bool { return hasKeyPrefix(k, r.Call.Keys) }) {
			return true, nil
		}
	}
	rd := c.Reader(r.Store)
	if rd == nil {
		return false, nil
	}
	return r.Call.again(rd, c, r.Store)
}

// holdsReplaced reports whether rec's emitted values or added files'
// owners hold an object of rec's reads that fresh (rec with the objects
// read now) does not read.
func (rec *Record) holdsReplaced(fresh *Record) bool {
	var replaced []unsafe.Pointer
	for i := range rec.Reads {
		for j, o := range rec.Reads[i].Call.Objs {
			if p := mapPtr(o); p != mapPtr(fresh.Reads[i].Call.Objs[j]) {
				replaced = append(replaced, p)
			}
		}
	}
	for _, p := range rec.Held {
		if slices.Contains(replaced, p) {
			return true
		}
	}
	for _, f := range rec.Files {
		if f.Owner != nil && slices.Contains(replaced, mapPtr(f.Owner)) {
			return true
		}
	}
	return false
}

// hasKeyPrefix reports whether keys begins with prefix.
func hasKeyPrefix(keys, prefix []string) bool {
	return len(prefix) <= len(keys) && slices.Equal(keys[:len(prefix)], prefix)
}

// again makes the call r on rd again and compares what it returns with
// what it returned: the same objects (by identity: store objects never
// change) or the same count (ok, now nil); objects each the recorded one
// or alike it (c.Alike, by store key; ok, now: the objects it returns);
// otherwise not ok.
func (r *StoreCall) again(rd store.Reader, c *Check, key string) (ok bool, now []map[string]any) {
	switch r.Method {
	case "Get":
		obj, found := rd.Get(r.Keys...)
		if !found || obj == nil || obj.Object == nil {
			return len(r.Objs) == 0, nil
		}
		switch {
		case len(r.Objs) != 1:
			return false, nil
		case mapPtr(obj.Object) == mapPtr(r.Objs[0]):
			return true, nil
		case c.Alike(key, r.Objs[0], obj.Object):
			return true, []map[string]any{obj.Object}
		}
		return false, nil
	case "Fetch":
		return sameObjects(rd.Fetch(r.Keys...), r.Objs, c, key)
	case "List":
		return sameObjects(rd.List(), r.Objs, c, key)
	case "Len":
		return rd.Len() == r.N, nil
	}
	return false, nil
}

// sameObjects compares got with the objects want, in order: each the
// same object (ok, now nil) or alike it (ok, now: got's objects).
func sameObjects(got []*unstructured.Unstructured, want []map[string]any, c *Check, key string) (ok bool, now []map[string]any) {
	i := 0
	for _, o := range got {
		if o == nil || o.Object == nil {
			continue // the engine's reads skip these too
		}
		if i == len(want) {
			return false, nil
		}
		if mapPtr(o.Object) != mapPtr(want[i]) {
			if !c.Alike(key, want[i], o.Object) {
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
