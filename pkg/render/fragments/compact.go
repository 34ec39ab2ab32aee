package fragments

import (
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// Records outlive the render that made them, but are made during it, one
// small object at a time (a text, a list of reads, the keys of each
// read, emitted strings), in between that render's garbage. After a
// collection each page of small objects then holds a few records' parts
// among free slots and cannot be returned: the heap's pages in use were
// three times its live bytes at rest at 10,000 HTTPRoutes. Compact, when
// a recording render ends, copies the records it made into one
// generation: one text arena holding every string they keep, one list
// of records and one list each of their reads, keys, objects, emits,
// files, warnings and held maps, each a single allocation. The render's
// small objects are then all garbage and their pages are freed whole.
//
// A copy is equal to its record field by field, strings byte for byte
// (what a template reads cannot tell them apart), and nothing writes to
// a generation once filled: records are never modified (Reusable copies
// one to change it), and each list of a copy is full (appending to it
// copies it).
//
// A generation stays whole while one of its records is in a table. A
// record reused as it is stays in its generation; a render copies only
// the records that are in none (those it ran, and those Reusable made
// from a record to apply it with the objects read now), unless the
// generations its table holds keep more bytes of records it no longer
// holds than its records take: then it copies all of them into a new
// one. So the generations a table holds are at most about twice its
// records, and a render that ran few fragments copies few records.

// generation is the storage of the records one Compact copied.
type generation struct {
	recs []Record
	// bytes is what the generation takes (footprint of each record).
	bytes int64
}

// compacted returns the generation r is stored in, nil when r is in none
// (a record as a render made it, or a copy of a stored one).
func (r *Record) compacted() *generation {
	if g := r.gen; g != nil && r.genIndex < len(g.recs) && &g.recs[r.genIndex] == r {
		return g
	}
	return nil
}

// Compact copies the records of t that are in no generation, or all of
// them (see above), into a new generation, and puts the copies in t in
// their place. It returns each record it replaced with its copy, for the
// render's other references to them (its source map).
func (t *Table) Compact() map[*Record]*Record {
	var live, inGens, held int64
	gens := map[*generation]bool{}
	var last *generation // the generation of the last record, looked up once
	fresh := 0
	for _, r := range t.Records {
		g := r.compacted()
		if g == nil {
			live += r.footprint()
			fresh++
			continue
		}
		live += r.stored
		inGens += r.stored
		if g != last {
			gens[g], last = true, g
		}
	}
	for g := range gens {
		held += g.bytes
	}
	all := held-inGens > live // the bytes of records t no longer holds
	if fresh == 0 && !all {
		return nil
	}
	copyIt := func(r *Record) bool { return all || r.compacted() == nil }
	var c sizes
	for _, r := range t.Records {
		if copyIt(r) {
			c.add(r)
		}
	}
	g := c.generation()
	moved := make(map[*Record]*Record, c.recs)
	for k, r := range t.Records {
		if !copyIt(r) {
			continue
		}
		m, ok := moved[r]
		if !ok {
			m = c.copy(r, g)
			moved[r] = m
		}
		t.Records[k] = m
	}
	return moved
}

// footprint is about what r's copy takes in a generation.
func (r *Record) footprint() int64 {
	var c sizes
	c.add(r)
	return c.bytes()
}

// sizes counts what a generation holds, and while filling it, the room
// left (free).
type sizes struct {
	text                                                int
	recs, reads, keys, objs, emits, files, warns, helds int
	free                                                struct {
		text  []byte
		recs  []Record
		reads []Read
		keys  []string
		objs  []map[string]any
		emits []Emission
		files []AddedFile
		warns []bundle.Warning
		helds []unsafe.Pointer
	}
}

// add counts r and what it keeps.
func (c *sizes) add(r *Record) {
	c.recs++
	c.text += len(r.Text)
	c.reads += len(r.Reads)
	for i := range r.Reads {
		c.keys += len(r.Reads[i].Call.Keys)
		c.objs += len(r.Reads[i].Call.Objs)
		for _, k := range r.Reads[i].Call.Keys {
			c.text += len(k)
		}
	}
	c.emits += len(r.Emits)
	for _, e := range r.Emits {
		c.text += len(e.Key)
		if s, ok := e.Value.(string); ok {
			c.text += len(s)
		}
	}
	c.files += len(r.Files)
	for _, f := range r.Files {
		c.text += len(f.Name) + len(f.Text)
	}
	c.warns += len(r.Warnings)
	for _, w := range r.Warnings {
		c.text += len(w.Message)
	}
	c.helds += len(r.Held)
}

// bytes is what the counted records take in a generation.
func (c *sizes) bytes() int64 {
	return int64(c.text) + int64(c.recs)*int64(unsafe.Sizeof(Record{})) +
		int64(c.reads)*int64(unsafe.Sizeof(Read{})) + int64(c.keys)*int64(unsafe.Sizeof("")) +
		int64(c.objs+c.helds)*8 + int64(c.emits)*int64(unsafe.Sizeof(Emission{})) +
		int64(c.files)*int64(unsafe.Sizeof(AddedFile{})) + int64(c.warns)*int64(unsafe.Sizeof(bundle.Warning{}))
}

// generation makes the storage for what c counted; copy fills it.
func (c *sizes) generation() *generation {
	g := &generation{recs: make([]Record, c.recs), bytes: c.bytes()}
	f := &c.free
	f.text, f.recs = make([]byte, c.text), g.recs
	f.reads, f.keys, f.objs = make([]Read, c.reads), make([]string, c.keys), make([]map[string]any, c.objs)
	f.emits, f.files = make([]Emission, c.emits), make([]AddedFile, c.files)
	f.warns, f.helds = make([]bundle.Warning, c.warns), make([]unsafe.Pointer, c.helds)
	return g
}

// copy returns r's copy, stored in the room left of g.
func (c *sizes) copy(r *Record, g *generation) *Record {
	f := &c.free
	m := &f.recs[0]
	f.recs = f.recs[1:]
	*m = *r
	m.gen, m.genIndex, m.stored = g, len(g.recs)-len(f.recs)-1, r.footprint()
	m.Text = c.str(r.Text)
	m.Reads = take(&f.reads, r.Reads)
	for i := range m.Reads {
		call := &m.Reads[i].Call
		call.Keys = take(&f.keys, call.Keys)
		for j, k := range call.Keys {
			call.Keys[j] = c.str(k)
		}
		call.Objs = take(&f.objs, call.Objs)
	}
	m.Emits = take(&f.emits, r.Emits)
	for i := range m.Emits {
		e := &m.Emits[i]
		e.Key = c.str(e.Key)
		if s, ok := e.Value.(string); ok {
			e.Value = c.str(s)
		}
	}
	m.Files = take(&f.files, r.Files)
	for i := range m.Files {
		m.Files[i].Name, m.Files[i].Text = c.str(m.Files[i].Name), c.str(m.Files[i].Text)
	}
	m.Warnings = take(&f.warns, r.Warnings)
	for i := range m.Warnings {
		m.Warnings[i].Message = c.str(m.Warnings[i].Message)
	}
	m.Held = take(&f.helds, r.Held)
	return m
}

// str returns s stored in the text arena: the bytes it is given are never
// written again. (s itself when the arena has no room: add and copy
// count the same strings, so it always has.)
func (c *sizes) str(s string) string {
	if s == "" || len(s) > len(c.free.text) {
		return s
	}
	n := copy(c.free.text, s)
	out := unsafe.String(&c.free.text[0], n)
	c.free.text = c.free.text[n:]
	return out
}

// take returns s copied to the front of the room left in *room (a full
// list of its length), s itself when empty (nil stays nil). (A copy of
// its own when *room is too short: add and copy count the same lists, so
// it never is.)
func take[E any](room *[]E, s []E) []E {
	if len(s) == 0 {
		return s
	}
	if len(s) > len(*room) {
		return append([]E(nil), s...)
	}
	n := copy(*room, s)
	out := (*room)[:n:n]
	*room = (*room)[n:]
	return out
}
