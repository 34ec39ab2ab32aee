package fragments

import (
	"slices"
	"strings"
	"sync"
)

// A channel's values in key order, and their text joined by a separator,
// from its Base: maps are written as join SEP (values (emitted X)), and
// a render over a base (OverBase) changes few of 10,000 entries. The
// shortcut, and why it answers as the full computation:
//
//   - a Base keeps, built once by the first render that asks, its values
//     in key order (Base.Sorted's order; none when those keys are not
//     known, as OverBase trusts them) and, for the first separator asked,
//     their text joined by it with where each value starts, only when
//     every value is a string (join then is strings.Join of them);
//   - a channel over the base (or the base itself) splices them: every key
//     its change adds, replaces or removes is found in Base.Sorted by a
//     binary search, and the runs of base values between are copied; a
//     value added or replaced that is not a string, or a splice whose
//     length is not the channel's, answers nothing (the caller computes
//     it). FuzzOverBaseReadsAsItsCopy compares both with the copy's;
//   - the text is kept with a newline after it (printf "%s\n" of it needs
//     no copy: package render's fused.go), and the next table's Base of a
//     channel left unchanged (the same map and keys in order) shares what
//     this one keeps (Channel.Base).

// baseValues is what a Base keeps of its values (built once).
type baseValues struct {
	once sync.Once
	vals []any // in Sorted's order; nil: keys in order unknown
	mu   sync.Mutex
	text *joinedText // for the first separator asked; nil: none yet
}

// joinedText is a Base's values joined by sep: value i starts at offs[i]
// of text, and offs[len(vals)] is len(text)+len(sep); nl is text and a
// newline (text is its start). ok false: a value is not a string.
type joinedText struct {
	sep      string
	text, nl string
	offs     []int
	ok       bool
}

// cache returns b's baseValues, made on the first call.
func (b *Base) cache() *baseValues {
	if c := b.kept.Load(); c != nil {
		return c
	}
	b.kept.CompareAndSwap(nil, &baseValues{})
	return b.kept.Load()
}

// values returns b's values in key order (never modified), nil when its
// keys in order are unknown.
func (b *Base) values() []any {
	c := b.cache()
	c.once.Do(func() {
		if b.Sorted == nil || len(b.Sorted) != len(b.Entries) {
			return
		}
		c.vals = make([]any, len(b.Sorted))
		for i, k := range b.Sorted {
			c.vals[i] = b.Entries[k]
		}
	})
	return c.vals
}

// joined returns b's values joined by sep, nil when they are not all
// strings, their order is unknown or another separator was asked first.
func (b *Base) joined(sep string) *joinedText {
	vals := b.values()
	if vals == nil {
		return nil
	}
	c := b.cache()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text == nil {
		j := &joinedText{sep: sep, offs: make([]int, len(vals)+1), ok: true}
		n := len(sep) * max(len(vals)-1, 0)
		for _, v := range vals {
			s, ok := v.(string)
			if !ok {
				j.ok, j.offs = false, nil
				break
			}
			n += len(s)
		}
		if j.ok {
			var sb strings.Builder
			sb.Grow(n + 1)
			for i, v := range vals {
				if i > 0 {
					sb.WriteString(sep)
				}
				j.offs[i] = sb.Len()
				sb.WriteString(v.(string))
			}
			sb.WriteByte('\n')
			j.nl = sb.String()
			j.text = j.nl[:len(j.nl)-1]
			j.offs[len(vals)] = len(j.text) + len(sep)
		}
		c.text = j
	}
	if !c.text.ok || c.text.sep != sep {
		return nil
	}
	return c.text
}

// edit is one change of a base's values in key order: before the base
// value at (ins), in place of it (rep) or without it (del).
type edit struct {
	at  int
	op  uint8
	val any
}

const (
	ins uint8 = iota
	rep
	del
)

// edits returns the overlay's changes by position in its base's keys in
// order (which must be known), in order: keys added at one position in
// key order (added is sorted, the sort is stable), before the base value
// there.
func (o *overlay) edits() []edit {
	out := make([]edit, 0, len(o.set)+len(o.gone))
	for _, k := range o.added {
		i, _ := slices.BinarySearch(o.base.Sorted, k)
		out = append(out, edit{at: i, op: ins, val: o.set[k]})
	}
	for k, v := range o.set {
		if i, in := slices.BinarySearch(o.base.Sorted, k); in {
			out = append(out, edit{at: i, op: rep, val: v})
		}
	}
	for k := range o.gone {
		if i, in := slices.BinarySearch(o.base.Sorted, k); in {
			out = append(out, edit{at: i, op: del})
		}
	}
	slices.SortStableFunc(out, func(a, b edit) int {
		if a.at != b.at {
			return a.at - b.at
		}
		return int(a.op) - int(b.op)
	})
	return out
}

// spliceValues returns vals (the base's values in key order) with o's
// edits applied.
func (o *overlay) spliceValues(vals []any) []any {
	out := make([]any, 0, o.n)
	prev := 0
	for _, e := range o.edits() {
		out = append(out, vals[prev:e.at]...)
		prev = e.at
		switch e.op {
		case ins:
			out = append(out, e.val)
		case rep:
			out = append(out, e.val)
			prev++
		case del:
			prev++
		}
	}
	return append(out, vals[prev:]...)
}

// spliceText returns j's text (the base's values joined) with o's edits
// applied, and it with a newline, false when a value added or replaced is
// not a string.
func (o *overlay) spliceText(j *joinedText) (string, string, bool) {
	var pieces []string
	n, count := 0, 0 // bytes, values
	add := func(s string) {
		pieces = append(pieces, s)
		n += len(s)
	}
	// run adds the base values [from, to) as one piece (with the
	// separators between them).
	run := func(from, to int) {
		if from < to {
			add(j.text[j.offs[from] : j.offs[to]-len(j.sep)])
			count += to - from
		}
	}
	prev := 0
	for _, e := range o.edits() {
		run(prev, e.at)
		prev = e.at
		if e.op != ins {
			prev++
		}
		if e.op != del {
			s, ok := e.val.(string)
			if !ok {
				return "", "", false
			}
			add(s)
			count++
		}
	}
	run(prev, len(j.offs)-1)
	if count != o.n {
		return "", "", false
	}
	var sb strings.Builder
	sb.Grow(n + len(j.sep)*max(len(pieces)-1, 0) + 1)
	for i, p := range pieces {
		if i > 0 {
			sb.WriteString(j.sep)
		}
		sb.WriteString(p)
	}
	sb.WriteByte('\n')
	nl := sb.String()
	return nl[:len(nl)-1], nl, true
}

// baseValues returns the channel's values in key order from its base's
// (false: the base does not know them); shared: the base's own list, when
// the channel is the base, which the caller must not modify nor hand on.
func (c *Channel) baseValues(shared bool) ([]any, bool) {
	if c.base == nil {
		return nil, false
	}
	vals := c.base.values()
	switch {
	case vals == nil:
		return nil, false
	case c.over == nil && shared:
		return vals, true
	case c.over == nil:
		return slices.Clone(vals), true
	}
	out := c.over.spliceValues(vals)
	return out, len(out) == c.over.n
}

// Entries returns the keys in order (Sorted) and, when its base knows
// them, their values in that order (the caller must not modify them nor
// hand them on), else nil (Get them); the channel takes no more.
func (c *Channel) Entries() ([]string, []any) {
	ks := c.Sorted()
	if vs, ok := c.baseValues(true); ok && len(vs) == len(ks) {
		return ks, vs
	}
	return ks, nil
}

// Joined returns the channel's values in key order joined by sep, as
// strings.Join would, that text followed by a newline (in the same
// memory: text is its start), and true, when every value is a string and
// its base knows them (Base.joined); else false. The channel takes no
// more.
func (c *Channel) Joined(sep string) (text, nl string, ok bool) {
	c.read = true
	if c.base == nil {
		return "", "", false
	}
	j := c.base.joined(sep)
	switch {
	case j == nil:
		return "", "", false
	case c.over == nil:
		return j.text, j.nl, true
	}
	return c.over.spliceText(j)
}
