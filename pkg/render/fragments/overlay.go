package fragments

import (
	"maps"
	"slices"
	"strings"
)

// Channels over a base: a render that applies a table's records reads
// most channels as the recording render read them (a Base), with the few
// keys its own fragments changed. Copying a channel of 10,000 entries to
// change one costs what the change does not, so such a channel keeps the
// base and its change, and answers each read from them:
//
//   - a key has the change's value when the change sets it, none when
//     the change removes it, else the base's;
//   - its keys in order are the base's (Base.Sorted: Base's Entries'
//     keys in order, checked by Channel.Base) without those the change
//     removes, merged with those it adds (sorted: they are few);
//   - the entries of a key prefix are found by a binary search in those
//     two lists (ReadPrefix).
//
// A read that needs every entry as one map (Read, Base) builds it once:
// a copy of the base with the change applied, the copy a render made
// before. The keys in order of a base whose keys in order are unknown,
// or not as many as its entries, are found from that copy (fail closed).
// FuzzOverBaseReadsAsItsCopy
// compares every read with the copy's.

// overlay is a channel's base and its change.
type overlay struct {
	base *Base
	set  map[string]any  // keys the change sets (added or replaced)
	gone map[string]bool // keys of base the change removes (none of set)
	// added are the keys of set that base lacks, sorted; n the number of
	// entries; keyed says base.Sorted are base's keys in order (else the
	// keys in order are found from every entry: the copy).
	added []string
	n     int
	keyed bool
}

// OverBase returns a channel already read (as ReadChannel's) that holds
// b's entries with the keys of set set to their values and those of gone
// removed (a key in both is set), without copying b: its last emitting
// record was at position last, and fresh are the keys that records run in
// this render added (see SortedFrom). b and set are never modified.
func OverBase(b *Base, set map[string]any, gone []string, last int, fresh []string) *Channel {
	c := &Channel{read: true, last: last, prev: b.Sorted, fresh: fresh, base: b}
	o := &overlay{base: b, set: set}
	for k := range set {
		if _, in := b.Entries[k]; !in {
			o.added = append(o.added, k)
		}
	}
	for _, k := range gone {
		_, setToo := set[k]
		if _, in := b.Entries[k]; in && !setToo {
			if o.gone == nil {
				o.gone = map[string]bool{}
			}
			o.gone[k] = true
		}
	}
	if len(o.added) == 0 && len(o.gone) == 0 && len(set) == 0 {
		c.entries = b.Entries // no change: the base itself
		return c
	}
	slices.Sort(o.added)
	o.n = len(b.Entries) + len(o.added) - len(o.gone)
	o.keyed = b.Sorted != nil && len(b.Sorted) == len(b.Entries)
	c.over = o
	return c
}

// all returns the channel's entries, built from its base and change on
// the first call.
func (c *Channel) all() map[string]any {
	if c.entries == nil && c.over != nil {
		o := c.over
		m := maps.Clone(o.base.Entries)
		if m == nil {
			m = make(map[string]any, len(o.set))
		}
		for k := range o.gone {
			delete(m, k)
		}
		maps.Copy(m, o.set)
		c.entries = m
	}
	return c.entries
}

// Get returns the value of key k, and whether the channel holds it,
// without building its entries; the channel takes no more.
func (c *Channel) Get(k string) (any, bool) {
	c.read = true
	return c.get(k)
}

// Values returns the values of the entries in key order (a new list);
// the channel takes no more. Over a base, each base key's value is looked
// up once, in the change only when it replaces some of the base's.
func (c *Channel) Values() []any {
	if out, ok := c.baseValues(false); ok {
		c.read = true
		return out
	}
	ks := c.Sorted()
	out := make([]any, len(ks))
	o := c.over
	if c.entries != nil || o == nil || len(o.set) > len(o.added) {
		for i, k := range ks {
			out[i], _ = c.get(k)
		}
		return out
	}
	// The change only adds keys (and removes some, which ks lacks): a
	// key is the base's unless added.
	a := o.added
	for i, k := range ks {
		if len(a) > 0 && a[0] == k {
			out[i], a = o.set[k], a[1:]
			continue
		}
		out[i] = o.base.Entries[k]
	}
	return out
}

// Count is the number of entries; the channel takes no more.
func (c *Channel) Count() int {
	c.read = true
	return c.Len()
}

// get returns the value of key k.
func (c *Channel) get(k string) (any, bool) {
	if c.entries != nil || c.over == nil {
		v, ok := c.entries[k]
		return v, ok
	}
	o := c.over
	if v, ok := o.set[k]; ok {
		return v, true
	}
	if o.gone[k] {
		return nil, false
	}
	v, ok := o.base.Entries[k]
	return v, ok
}

// overSorted returns the keys of a channel over a base in order (the
// base's own when the change adds and removes none), nil for any other
// channel and when the base's keys in order are unknown.
func (c *Channel) overSorted() []string {
	o := c.over
	if o == nil || !o.keyed {
		return nil
	}
	if len(o.added) == 0 && len(o.gone) == 0 {
		return o.base.Sorted
	}
	return o.merge(o.base.Sorted, o.added, o.n)
}

// merge returns base's keys (sorted) that the change keeps merged with
// added (sorted, none of base's), with room for n.
func (o *overlay) merge(base, added []string, n int) []string {
	out := make([]string, 0, n)
	for _, k := range base {
		for len(added) > 0 && added[0] < k {
			out = append(out, added[0])
			added = added[1:]
		}
		if !o.gone[k] {
			out = append(out, k)
		}
	}
	return append(out, added...)
}

// overPrefix is ReadPrefix for a channel over a base whose keys in order
// were not asked for yet (ok false for any other): a binary search in the
// base's keys in order and in those the change adds.
func (c *Channel) overPrefix(p string) (m map[string]any, keys []string, ok bool) {
	if keys, ok = c.overPrefixKeys(p); !ok {
		return nil, nil, false
	}
	m = make(map[string]any, len(keys))
	for _, k := range keys {
		m[k], _ = c.get(k)
	}
	return m, keys, true
}

// overPrefixKeys is overPrefix's keys, without the entries.
func (c *Channel) overPrefixKeys(p string) (keys []string, ok bool) {
	o := c.over
	if o == nil || !o.keyed || c.sorted != nil {
		return nil, false
	}
	c.read = true
	base, added := prefixRange(o.base.Sorted, p), prefixRange(o.added, p)
	keys = base[:len(base):len(base)]
	if len(added) > 0 || len(o.gone) > 0 {
		keys = o.merge(base, added, len(base)+len(added))
	}
	return keys, true
}

// prefixRange returns the keys of sorted that begin with p.
func prefixRange(sorted []string, p string) []string {
	i, _ := slices.BinarySearch(sorted, p)
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j], p) {
		j++
	}
	return sorted[i:j]
}
