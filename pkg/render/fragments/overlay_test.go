package fragments

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzOverBaseReadsAsItsCopy: a channel over a base, given a random change
// (keys added, replaced, set to their value, removed, removed and set,
// removed when absent), answers every read, in any order and any number
// of times (its length, its keys in order, the entries of a key prefix,
// the value of a key, the values in key order (alone, and with the keys),
// those joined by a separator, every entry, its Base and the values it keeps), as the copy of the base with the change applied
// does, and leaves the base as it was.
func FuzzOverBaseReadsAsItsCopy(f *testing.F) {
	for seed := range uint64(32) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 7))
		key := func() string { // short keys over a few letters: prefixes meet
			b := make([]byte, 1+r.IntN(3))
			for i := range b {
				b[i] = "ab|"[r.IntN(3)]
			}
			return string(b)
		}
		// Strings only for some seeds (a stream of its own, so that r
		// gives every seed what it gave before): what Joined answers for.
		stringsOnly := rand.New(rand.NewPCG(seed, 11)).IntN(2) == 0
		value := func() any {
			if r.IntN(2) == 0 || stringsOnly {
				return "v" + strconv.Itoa(r.IntN(3))
			}
			return map[string]any{"n": r.IntN(3)}
		}
		var entries map[string]any
		if r.IntN(8) > 0 {
			entries = map[string]any{}
			for range r.IntN(20) {
				entries[key()] = value()
			}
		}
		b := &Base{Entries: entries, Last: r.IntN(5) - 1}
		switch r.IntN(6) {
		case 0: // keys in order unknown
		case 1: // not as many as the entries: not trusted
			b.Sorted = slices.Sorted(maps.Keys(entries))
			if len(b.Sorted) > 0 {
				b.Sorted = b.Sorted[1:]
			}
		default:
			b.Sorted = slices.Sorted(maps.Keys(entries))
		}
		was := maps.Clone(entries)
		var set map[string]any
		var gone, fresh []string
		for range r.IntN(6) {
			switch k := key(); r.IntN(4) {
			case 0:
				gone = append(gone, k)
			case 1:
				if v, ok := entries[k]; ok {
					if set == nil {
						set = map[string]any{}
					}
					set[k] = v // set to the value it has
					break
				}
				fallthrough
			default:
				if set == nil {
					set = map[string]any{}
				}
				set[k] = value()
				if r.IntN(2) == 0 {
					fresh = append(fresh, k)
				}
			}
		}
		want := maps.Clone(entries)
		if want == nil && len(set) > 0 { // no entry to remove: a change only adds
			want = map[string]any{}
		}
		for _, k := range gone {
			delete(want, k)
		}
		maps.Copy(want, set)
		last := r.IntN(9) - 1
		copied := ReadChannel(want, last, b.Sorted, fresh)
		over := OverBase(b, set, gone, last, fresh)

		if r.IntN(2) == 0 { // every key's value, before any read copies
			for _, k := range slices.Concat(slices.Collect(maps.Keys(entries)), slices.Collect(maps.Keys(set)), gone, []string{"absent"}) {
				wv, wok := copied.Get(k)
				gv, gok := over.Get(k)
				require.Equal(t, wok, gok, "Get %q", k)
				require.Equal(t, wv, gv, "Get %q", k)
			}
		}
		for i := range 1 + r.IntN(6) {
			switch r.IntN(8) {
			case 7:
				sep := []string{"\n", ",", ""}[r.IntN(3)]
				joinedAsItsCopy(t, copied, over, b, sep)
			case 6:
				require.Equal(t, copied.Values(), over.Values(), "read %d: Values", i)
				ks, vs := over.Entries()
				require.Equal(t, emptyNil(copied.Sorted()), emptyNil(ks), "read %d: Entries' keys", i)
				for n, k := range ks {
					if vs != nil {
						wv, _ := copied.Get(k)
						require.Equal(t, wv, vs[n], "read %d: Entries' value of %q", i, k)
					}
				}
			case 0:
				require.Equal(t, copied.Len(), over.Len(), "read %d: Len", i)
			case 1:
				p := key()
				switch r.IntN(4) {
				case 0:
					p = ""
				case 1:
					p = p[:1]
				}
				gotM, gotK := over.ReadPrefix(p)
				wantM, wantK := copied.ReadPrefix(p)
				require.Equal(t, wantM, gotM, "read %d: prefix %q", i, p)
				require.Equal(t, len(wantK), len(gotK), "read %d: prefix %q", i, p)
				if len(wantK) > 0 {
					require.Equal(t, wantK, gotK, "read %d: prefix %q", i, p)
				}
			case 2:
				require.Equal(t, emptyNil(copied.Sorted()), emptyNil(over.Sorted()), "read %d: Sorted", i)
			case 3:
				require.Equal(t, copied.Read(), over.Read(), "read %d: Read", i)
			case 5:
				k := key()
				if len(gone) > 0 && r.IntN(2) == 0 {
					k = gone[r.IntN(len(gone))]
				}
				wv, wok := copied.Get(k)
				gv, gok := over.Get(k)
				require.Equal(t, wok, gok, "read %d: Get %q", i, k)
				require.Equal(t, wv, gv, "read %d: Get %q", i, k)
			case 4:
				wb, gb := copied.Base(), over.Base()
				require.Equal(t, wb.Entries, gb.Entries, "read %d: Base", i)
				if vals := gb.values(); vals != nil { // kept, or shared with b
					want := make([]any, 0, len(vals))
					for _, k := range slices.Sorted(maps.Keys(gb.Entries)) {
						want = append(want, gb.Entries[k])
					}
					require.Equal(t, want, vals, "read %d: Base's values", i)
				}
				require.Equal(t, wb.Last, gb.Last, "read %d: Base", i)
				if gb.Sorted != nil {
					require.Equal(t, emptyNil(slices.Sorted(maps.Keys(gb.Entries))), emptyNil(gb.Sorted), "read %d: Base's keys in order", i)
				}
			}
		}
		assert.Equal(t, copied.Len(), over.Len())
		assert.Equal(t, emptyNil(copied.Sorted()), emptyNil(over.Sorted()))
		assert.Equal(t, copied.Read(), over.Read())
		assert.Error(t, over.Add(Emission{Channel: "ch", Key: "x"}, 0, true), "a channel over a base is read")
		assert.Equal(t, was, b.Entries, "the base is not modified")
	})
}

// joinedAsItsCopy checks over's Joined against strings.Join of the
// copy's values: equal when it answers, and it answers when every value is
// a string, b knows its keys in order and sep is the first asked of b.
func joinedAsItsCopy(t *testing.T, copied, over *Channel, b *Base, sep string) {
	t.Helper()
	vals := copied.Values()
	strs := make([]string, 0, len(vals))
	for _, v := range vals {
		if s, ok := v.(string); ok {
			strs = append(strs, s)
		}
	}
	text, nl, ok := over.Joined(sep)
	if ok {
		require.Len(t, strs, len(vals), "joined, with a value not a string: %v", vals)
		require.Equal(t, strings.Join(strs, sep), text, "Joined %q", sep)
		require.Equal(t, text+"\n", nl, "Joined %q with a newline", sep)
		require.Equal(t, unsafe.StringData(nl), unsafe.StringData(text), "the text is the start of the one with a newline")
		return
	}
	allStrings := len(strs) == len(vals)
	for _, v := range b.Entries {
		_, isString := v.(string)
		allStrings = allStrings && isString
	}
	keyed := b.Sorted != nil && len(b.Sorted) == len(b.Entries)
	if j := b.cache().text; allStrings && keyed && (j == nil || j.sep == sep) {
		t.Fatalf("Joined %q did not answer for strings %v over a base that knows its keys in order", sep, vals)
	}
}

// emptyNil is s, nil when empty (a sort of no keys may give either).
func emptyNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestAChannelOverABaseCopiesItOnlyForAWholeRead: a channel over a base
// answers its length, its keys in order and the entries of a prefix
// without copying the base; reading every entry copies it once; a change
// that changes nothing is the base itself; a base whose keys in order are
// unknown is copied only for them or a prefix; its Base (a whole read) has its keys in
// order, found or not before.
func TestAChannelOverABaseCopiesItOnlyForAWholeRead(t *testing.T) {
	base := func() *Base {
		return &Base{Entries: map[string]any{"a|1": "x", "a|2": "y", "b|1": "z"}, Sorted: []string{"a|1", "a|2", "b|1"}}
	}
	for _, tc := range []struct {
		name       string
		base       *Base
		set        map[string]any
		gone       []string
		read       func(c *Channel) any
		want       any
		copiedNow  bool
		sameAsBase bool
	}{
		{name: "its length is counted", base: base(), set: map[string]any{"a|3": "w"}, gone: []string{"b|1"},
			read: func(c *Channel) any { return c.Len() }, want: 3},
		{name: "its keys in order are merged", base: base(), set: map[string]any{"a|3": "w"}, gone: []string{"a|1"},
			read: func(c *Channel) any { return c.Sorted() }, want: []string{"a|2", "a|3", "b|1"}},
		{name: "a prefix is searched", base: base(), set: map[string]any{"a|2": "new", "a|0": "w"}, gone: []string{"a|1"},
			read: func(c *Channel) any { m, _ := c.ReadPrefix("a|"); return m }, want: map[string]any{"a|0": "w", "a|2": "new"}},
		{name: "its Base has its keys in order after a prefix read", base: base(), set: map[string]any{"c": "w"},
			read: func(c *Channel) any { c.ReadPrefix("a|"); return c.Base().Sorted }, want: []string{"a|1", "a|2", "b|1", "c"}, copiedNow: true},
		{name: "a whole read copies", base: base(), set: map[string]any{"c": "w"},
			read: func(c *Channel) any { return c.Read() }, want: map[string]any{"a|1": "x", "a|2": "y", "b|1": "z", "c": "w"}, copiedNow: true},
		{name: "no change is the base", base: base(), gone: []string{"absent"},
			read: func(c *Channel) any { return c.Read() }, want: base().Entries, sameAsBase: true},
		{name: "keys in order unknown: not copied for its length", base: &Base{Entries: map[string]any{"a": "x"}}, set: map[string]any{"b": "y"},
			read: func(c *Channel) any { return c.Len() }, want: 2},
		{name: "keys in order unknown: copied for them", base: &Base{Entries: map[string]any{"a": "x"}}, set: map[string]any{"b": "y"},
			read: func(c *Channel) any { return c.Sorted() }, want: []string{"a", "b"}, copiedNow: true},
		{name: "keys in order unknown: copied for a prefix", base: &Base{Entries: map[string]any{"a": "x", "b": "z"}}, set: map[string]any{"b": "y"},
			read: func(c *Channel) any { m, _ := c.ReadPrefix("b"); return m }, want: map[string]any{"b": "y"}, copiedNow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := OverBase(tc.base, tc.set, tc.gone, 0, nil)
			assert.Equal(t, tc.want, tc.read(c))
			if tc.sameAsBase {
				assert.Equal(t, mapPtr(tc.base.Entries), mapPtr(c.entries), "the base itself")
				return
			}
			assert.Equal(t, tc.copiedNow, c.entries != nil, "copied")
		})
	}
}

// TestABaseKeepsItsKeysInOrderOnlyChecked: a channel's Base keeps the
// keys in order it found only when they are its entries' keys in order.
func TestABaseKeepsItsKeysInOrderOnlyChecked(t *testing.T) {
	entries := map[string]any{"a": 1, "b": 2}
	for _, tc := range []struct {
		name   string
		sorted []string
		kept   bool
	}{
		{"its keys in order", []string{"a", "b"}, true},
		{"out of order", []string{"b", "a"}, false},
		{"one missing", []string{"a"}, false},
		{"one not an entry", []string{"a", "c"}, false},
		{"twice", []string{"a", "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ReadChannel(entries, 0, nil, nil)
			c.sorted = tc.sorted
			assert.Equal(t, tc.kept, c.Base().Sorted != nil)
		})
	}
}

// TestChannelsOverOneBaseReadItsValuesConcurrently: renders over one
// Base (concurrent admissions) build what it keeps once and read it
// together (go test -race), each answering as its copy.
func TestChannelsOverOneBaseReadItsValuesConcurrently(t *testing.T) {
	b := &Base{Entries: map[string]any{"a": "1", "b": "2", "c": "3"}, Sorted: []string{"a", "b", "c"}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set := map[string]any{"b" + strconv.Itoa(i): "x"}
			c := OverBase(b, set, []string{"c"}, 0, nil)
			text, _, ok := c.Joined("\n")
			assert.True(t, ok)
			assert.Equal(t, "1\n2\nx", text)
			assert.Equal(t, []any{"1", "2", "x"}, c.Values())
			u := OverBase(b, nil, nil, 0, nil)
			text, _, _ = u.Joined("\n")
			assert.Equal(t, "1\n2\n3", text)
		}()
	}
	wg.Wait()
}
