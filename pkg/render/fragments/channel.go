package fragments

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Channel holds what fragments emitted on one channel: the first value of
// each key. Once read, it takes no more. A channel over a Base (OverBase)
// holds the base and its change, and builds its entries only for a read
// that needs them all (overlay.go).
type Channel struct {
	entries map[string]any // nil while over a base and not built
	over    *overlay       // nil: entries hold everything
	base    *Base          // the base of a channel OverBase made, else nil
	read    bool
	sorted  []string // the keys, sorted by the first Sorted or ReadPrefix
	// prev are the sorted keys this channel had in the recording render
	// whose records this render applies (nil: unknown); fresh the keys
	// that records run in this render (not reused) added. They only make
	// Sorted cheaper (SortedFrom).
	prev, fresh []string
	// last is the position, among the records the render applied, of
	// the last one that emitted on the channel (-1: none did).
	last int
}

// Base is a channel as the recording render read it, kept with its
// Table (KeepChannel) for the renders that apply its records.
type Base struct {
	// Entries are the channel's entries (never modified).
	Entries map[string]any
	// Sorted are its keys in order when that render sorted them, else nil.
	Sorted []string
	// Last is the position in the table's order of the last record that
	// emitted on the channel, -1 when none did.
	Last int
	// kept are its values in key order and their joined text, built by
	// the first render over it that asks (joined.go).
	kept atomic.Pointer[baseValues]
}

// NewChannel returns an empty channel with room for n entries. prev are
// the channel's sorted keys in the recording render whose records the
// render applies (Base.Sorted; nil when unknown).
func NewChannel(n int, prev []string) *Channel {
	return &Channel{entries: make(map[string]any, n), prev: prev, last: -1}
}

// ReadChannel returns a channel already read, holding entries (which it
// never modifies), whose last emitting record was at position last; prev
// and fresh are NewChannel's and Add's (see SortedFrom).
func ReadChannel(entries map[string]any, last int, prev, fresh []string) *Channel {
	return &Channel{entries: entries, read: true, last: last, prev: prev, fresh: fresh}
}

// Add adds e to the channel unless its key has a value already; it fails
// once the channel was read. at is the position, among the records the
// render applied, of the one e comes from; ran says that record ran in
// this render (it is not a reused record).
func (c *Channel) Add(e Emission, at int, ran bool) error {
	if c.read {
		return fmt.Errorf("emit %q %q: emitted already read the channel (render every fragment that emits on it first)", e.Channel, e.Key)
	}
	c.last = at
	if _, ok := c.entries[e.Key]; !ok {
		c.entries[e.Key] = e.Value
		if ran {
			c.fresh = append(c.fresh, e.Key)
		}
	}
	return nil
}

// IsRead reports whether the channel was read.
func (c *Channel) IsRead() bool { return c.read }

// Len is the number of entries.
func (c *Channel) Len() int {
	if c.entries == nil && c.over != nil {
		return c.over.n
	}
	return len(c.entries)
}

// Base returns the channel as Table.KeepChannel keeps it; it must have
// been read. A channel over a base gives its keys in order too (a
// prefix read does not find them), so that the next render's does not
// copy it. The keys in order are checked once here (each greater than
// the one before, each an entry, as many as the entries), for every
// render over the base (OverBase) that trusts them; unchecked, they are
// not kept.
func (c *Channel) Base() *Base {
	if c.sorted == nil && c.over != nil {
		c.sorted = c.overSorted()
	}
	b := &Base{Entries: c.all(), Sorted: c.sorted, Last: c.last}
	if o := c.base; o != nil && c.over == nil && sameKeys(o, b) {
		// The same entries and keys in order: what o keeps holds for b.
		b.kept.Store(o.cache())
		return b
	}
	if !keysInOrder(b.Sorted, b.Entries) {
		b.Sorted = nil
	}
	return b
}

// sameKeys reports whether a and b hold the same map and the same list
// of keys in order (b's as a's were found: trusted as a's).
func sameKeys(a, b *Base) bool {
	return len(a.Entries) == len(b.Entries) && mapPtr(a.Entries) == mapPtr(b.Entries) &&
		len(a.Sorted) == len(b.Sorted) && a.Sorted != nil && unsafe.SliceData(a.Sorted) == unsafe.SliceData(b.Sorted)
}

// keysInOrder reports whether keys are m's keys in order.
func keysInOrder(keys []string, m map[string]any) bool {
	if len(keys) != len(m) {
		return false
	}
	for i, k := range keys {
		if i > 0 && keys[i-1] >= k {
			return false
		}
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// Read returns the entries (the caller must not modify them); the channel
// takes no more.
func (c *Channel) Read() map[string]any {
	c.read = true
	return c.all()
}

// Sorted returns the keys of the entries in order (the caller must not
// modify them); the channel takes no more. They are found once, by
// SortedFrom.
func (c *Channel) Sorted() []string {
	c.read = true
	if c.sorted == nil {
		if b := c.base; b != nil && c.over == nil && b.Sorted != nil && len(b.Sorted) == len(b.Entries) {
			c.sorted = b.Sorted // the base itself, whose keys in order OverBase trusts
		} else if c.sorted = c.overSorted(); c.sorted == nil {
			c.sorted = SortedFrom(c.prev, c.fresh, c.all())
		}
		c.prev, c.fresh = nil, nil
	}
	return c.sorted
}

// ReadPrefix returns the entries whose key begins with p, and their keys
// in order; the channel takes no more. The keys are sorted once, on the
// first call (Sorted), so that each call costs a binary search and the
// entries it returns.
func (c *Channel) ReadPrefix(p string) (map[string]any, []string) {
	if m, keys, ok := c.overPrefix(p); ok {
		return m, keys
	}
	sorted := c.Sorted()
	i, _ := slices.BinarySearch(sorted, p)
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j], p) {
		j++
	}
	out := make(map[string]any, j-i)
	for _, k := range sorted[i:j] {
		out[k], _ = c.get(k)
	}
	return out, sorted[i:j:j]
}

// CountPrefix is how many entries ReadPrefix(p) returns, without them;
// the channel takes no more.
func (c *Channel) CountPrefix(p string) int {
	if keys, ok := c.overPrefixKeys(p); ok {
		return len(keys)
	}
	return len(prefixRange(c.Sorted(), p))
}

// SortedFrom returns the keys of m in order, as slices.Sorted would,
// usually without sorting them. The shortcut, and why it is safe:
//
// prev are the sorted keys m's channel had in the recording render whose
// records this render applied, fresh the keys that fragments run in this
// render added to m. A reused record emits what it emitted when recorded,
// so m's keys are mostly prev's, the others among fresh. SortedFrom takes
// prev's keys that m holds, in prev's order, merges in fresh's that prev
// lacks (sorted: they are few), and checks the result: each key in m,
// each greater than the one before, and as many as m holds. A list with
// those three properties is m's sorted key set, whatever prev and fresh
// were; when the check fails (prev unsorted, another channel's, a key
// missed) SortedFrom sorts m's keys instead.
func SortedFrom(prev, fresh []string, m map[string]any) []string {
	if prev == nil {
		return slices.Sorted(maps.Keys(m))
	}
	kept := make([]string, 0, len(m))
	for _, k := range prev {
		if _, ok := m[k]; ok {
			kept = append(kept, k)
		}
	}
	var extra []string
	if len(kept) < len(m) {
		for _, k := range fresh {
			if _, in := slices.BinarySearch(prev, k); !in {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		extra = slices.Compact(extra)
	}
	out := kept
	if len(extra) > 0 {
		out = mergeSorted(kept, extra)
	}
	if len(out) != len(m) {
		return slices.Sorted(maps.Keys(m))
	}
	for i, k := range out {
		if i > 0 && out[i-1] >= k {
			return slices.Sorted(maps.Keys(m))
		}
	}
	for _, k := range extra {
		if _, ok := m[k]; !ok {
			return slices.Sorted(maps.Keys(m))
		}
	}
	return out
}

// mergeSorted merges two sorted lists into a new one.
func mergeSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
