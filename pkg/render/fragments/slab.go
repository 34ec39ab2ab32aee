package fragments

import "unsafe"

// A recording render's records outlive it; nearly everything else it
// allocates is garbage. Allocated one by one among that garbage, the
// records' strings and lists would sit on most of the pages the render
// used, and a page holding one live object stays in use (a collection
// returns only empty pages): the heap kept at rest would follow the
// render's peak, not what it keeps. A Slab allocates them instead from
// chunks of slabChunkBytes or more (an object that large gets pages of
// its own): Keep copies a record into it. A chunk lives as long as one
// record in it does, so a table copies into its own slab every record it
// holds of another (Table.End), and the old chunks go with the tables and
// bundles that hold their records. A record's text is most of it: End
// makes it the bytes of the render's output where the record wrote it,
// which the bundle keeps anyway, or a copy in the slab when it is not
// found there.

// slabChunkBytes is the least size of a Slab's chunk: above the size from
// which an object gets pages of its own (32 KiB).
const slabChunkBytes = 64 << 10

// Slab holds the records of one Table and what they hold of their own
// (texts, lists, strings), in chunks. One render uses it at a time.
type Slab struct {
	text  []byte
	recs  []Record
	reads []Read
	objs  []map[string]any
	strs  []string
	emits []Emission
	ptrs  []unsafe.Pointer
	// n counts the records kept in it.
	n int
}

// Keep returns a copy of r in s, with text as its text (not copied: the
// table settles it at its end, Table.End): its lists and the strings of
// its reads' keys, emits' keys, and the keys of its reads copied into s's
// chunks; its items, objects read, emitted values, files and warnings are
// shared with r.
func (s *Slab) Keep(r *Record, text string) *Record {
	k := &take(&s.recs, 1)[0]
	*k = Record{Text: text, Scratch: r.Scratch, Item: r.Item, Files: trimmed(r.Files), Warnings: trimmed(r.Warnings), slab: s}
	if len(r.Reads) > 0 {
		k.Reads = take(&s.reads, len(r.Reads))
		for i, rd := range r.Reads {
			c := rd.Call
			if len(c.Keys) > 0 {
				keys := take(&s.strs, len(c.Keys))
				for j, key := range c.Keys {
					keys[j] = s.String(key)
				}
				c.Keys = keys
			}
			if len(c.Objs) > 0 {
				c.Objs = append(take(&s.objs, len(c.Objs))[:0], c.Objs...)
			}
			k.Reads[i] = Read{Store: rd.Store, Call: c}
		}
	}
	if len(r.Emits) > 0 {
		k.Emits = take(&s.emits, len(r.Emits))
		for i, e := range r.Emits {
			k.Emits[i] = Emission{Channel: e.Channel, Key: s.String(e.Key), Value: e.Value}
		}
	}
	if len(r.Held) > 0 {
		k.Held = append(take(&s.ptrs, len(r.Held))[:0], r.Held...)
	}
	s.n++
	return k
}

// String returns a copy of str in s's chunks ("" when empty; str
// itself when s is nil).
func (s *Slab) String(str string) string {
	if s == nil || str == "" {
		return str
	}
	b := take(&s.text, len(str))
	copy(b, str)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// take returns n elements (nil for none) from the room of chunk, first
// given a new chunk when it has not enough room left.
func take[E any](chunk *[]E, n int) []E {
	if n == 0 {
		return nil
	}
	c := *chunk
	if cap(c)-len(c) < n {
		var e E
		c = make([]E, 0, max(n, slabChunkBytes/max(1, int(unsafe.Sizeof(e)))))
	}
	out := c[len(c) : len(c)+n : len(c)+n]
	*chunk = c[:len(c)+n]
	return out
}
