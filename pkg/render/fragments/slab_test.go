package fragments

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestAKeptRecordHoldsWhatTheRecordHeld: a record kept in a table's slab
// equals, once the table ended, the record the fragment ran into, field by
// field, with lists of exactly their length, and its strings are copies
// (the render's buffer may be written again).
func TestAKeptRecordHoldsWhatTheRecordHeld(t *testing.T) {
	obj := map[string]any{"kind": "Service"}
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{name: "empty", rec: Record{}},
		{name: "every field", rec: Record{
			Reads: append(make([]Read, 0, 8),
				Read{Store: "services", Call: StoreCall{Method: "Get", Keys: []string{"ns", "a"}, Objs: []map[string]any{obj}}},
				Read{Store: "services", Call: StoreCall{Method: "List"}},
				Read{Store: "services", Call: StoreCall{Method: "Len", N: 3}}),
			Emits:    append(make([]Emission, 0, 8), Emission{Channel: "c", Key: "k", Value: map[string]any{"v": "x"}}, Emission{Channel: "c", Key: "", Value: nil}),
			Files:    []AddedFile{{Kind: bundle.KindMap, Name: "m", Text: "t", Owner: obj}},
			Warnings: []bundle.Warning{{Message: "w"}},
			Scratch:  7, Item: obj, Held: []unsafe.Pointer{mapPtr(obj)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := []byte("the text")
			tbl := NewTable("/b", 1, store.Set{}, 0)
			in := tc.rec
			k := tbl.Keep(&in, text)
			tbl.Add([]byte("k"), k, Place{Out: -1})
			tbl.End(nil)
			copy(text, "xxxxxxxx")
			want := tc.rec
			want.Text = "the text"
			got := *k
			got.slab = nil
			assert.Equal(t, want, got)
			for _, n := range []int{cap(k.Reads) - len(k.Reads), cap(k.Emits) - len(k.Emits), cap(k.Held) - len(k.Held)} {
				assert.Zero(t, n, "room left")
			}
			for _, r := range k.Reads {
				assert.Equal(t, len(r.Call.Keys), cap(r.Call.Keys))
				assert.Equal(t, len(r.Call.Objs), cap(r.Call.Objs))
			}
		})
	}
}

// TestATableEndsWithEveryRecordInItsSlab: at its end, a table copies into
// its own slab every record it holds of another table's slab, however
// many of that slab's it reuses, and the copies hold what the records
// held; the records of the other table stay as they were.
func TestATableEndsWithEveryRecordInItsSlab(t *testing.T) {
	for _, reused := range []int{10, 5, 1} { // of the 10 records of the first table
		t.Run(fmt.Sprint(reused, " reused"), func(t *testing.T) {
			first := NewTable("/b", 1, store.Set{}, 0)
			for i := range 10 {
				k := fmt.Sprint(i)
				first.Add([]byte(k), first.Keep(&Record{Emits: []Emission{{Channel: "c", Key: k}}}, []byte(k)), Place{Out: -1})
			}
			first.End(nil)
			next := NewTable("/b", 1, store.Set{}, 0)
			for i := range reused {
				k := fmt.Sprint(i)
				next.Add([]byte(k), first.Records[k], Place{Out: -1})
			}
			next.Add([]byte("new"), next.Keep(&Record{}, []byte("new")), Place{Out: -1})
			moved := next.End(nil)
			assert.Len(t, moved, reused)
			for i := range reused {
				k := fmt.Sprint(i)
				got := next.Records[k]
				require.NotNil(t, got)
				assert.NotSame(t, first.Records[k], got, k)
				assert.Same(t, got, moved[first.Records[k]], k)
				assert.Equal(t, k, got.Text)
				assert.Equal(t, []Emission{{Channel: "c", Key: k}}, got.Emits)
				assert.Same(t, next.slab, got.slab, k)
				assert.Same(t, first.slab, first.Records[k].slab, k)
				assert.Equal(t, k, first.Records[k].Text)
			}
			for i, o := range next.order {
				assert.Same(t, next.Records[o.key], o.rec, "order %d", i)
			}
		})
	}
}

// TestARecordsTextIsTheOutputsWhereItLiesThere: at its end, a table gives
// each record the bytes of the output where the render wrote its text
// (Place) when they are its text, and a copy of its own in any other
// case: placed elsewhere or nowhere, in an output it is not in or past
// its end, or empty; a record of an earlier table likewise, copied.
func TestARecordsTextIsTheOutputsWhereItLiesThere(t *testing.T) {
	outputs := []string{"head [a][b] tail", "", "[c]"}
	for _, tc := range []struct {
		name string
		text string
		at   Place
		in   int // the output whose bytes the text is, -1: a copy
	}{
		{name: "where it lies", text: "[a]", at: Place{Out: 0, Off: 5}, in: 0},
		{name: "in another output", text: "[c]", at: Place{Out: 2, Off: 0}, in: 2},
		{name: "one byte off", text: "[a]", at: Place{Out: 0, Off: 6}, in: -1},
		{name: "other text there", text: "[x]", at: Place{Out: 0, Off: 5}, in: -1},
		{name: "past the end", text: "[c]x", at: Place{Out: 2, Off: 0}, in: -1},
		{name: "an output not kept", text: "[c]", at: Place{Out: 1, Off: 0}, in: -1},
		{name: "no such output", text: "[c]", at: Place{Out: 3, Off: 0}, in: -1},
		{name: "in no output", text: "[a]", at: Place{Out: -1}, in: -1},
		{name: "empty", text: "", at: Place{Out: 0, Off: 5}, in: -1},
	} {
		for _, earlier := range []bool{false, true} {
			t.Run(fmt.Sprint(tc.name, " earlier ", earlier), func(t *testing.T) {
				text := []byte(tc.text)
				tbl := NewTable("/b", 1, store.Set{}, 0)
				rec := tbl.Keep(&Record{}, text)
				if earlier {
					first := tbl
					first.Add([]byte("k"), rec, Place{Out: -1})
					first.End(nil)
					tbl = NewTable("/b", 1, store.Set{}, 0)
				}
				tbl.Add([]byte("k"), rec, tc.at)
				tbl.End(outputs)
				copy(text, strings.Repeat("x", len(text)))
				got := tbl.Records["k"].Text
				assert.Equal(t, tc.text, got)
				if tc.in >= 0 {
					o := outputs[tc.in]
					assert.Same(t, unsafe.StringData(o[tc.at.Off:]), unsafe.StringData(got), "the output's bytes")
				} else if got != "" {
					for _, o := range outputs {
						if o != "" {
							p, q := uintptr(unsafe.Pointer(unsafe.StringData(o))), uintptr(unsafe.Pointer(unsafe.StringData(got)))
							assert.False(t, q >= p && q < p+uintptr(len(o)), "a copy, not the output's bytes")
						}
					}
				}
				if earlier {
					assert.Equal(t, tc.text, rec.Text, "the earlier table's record is left as it was")
				}
			})
		}
	}
}

// TestATablesKeysGoWithIt: a table that reuses every record of the last
// one keeps that table's slab (it uses all of it), but not the last
// table's keys: they are kept apart from the records (Table.keyText),
// and go once that table does.
func TestATablesKeysGoWithIt(t *testing.T) {
	first := NewTable("/b", 1, store.Set{}, 0)
	for i := range 10 {
		k := fmt.Sprint("key-", i)
		first.Add([]byte(k), first.Keep(&Record{}, []byte(fmt.Sprint("text-", i))), Place{Out: -1})
	}
	first.End(nil)
	next := NewTable("/b", 1, store.Set{}, 0)
	for _, o := range first.order {
		next.Add([]byte(o.key), o.rec, Place{Out: -1})
	}
	next.End(nil)
	key := weak.Make(unsafe.StringData(first.order[0].key))
	first = nil
	runtime.GC()
	runtime.GC()
	assert.Nil(t, key.Value(), "the first table's keys were collected")
	require.Len(t, next.Records, 10)
	for i := range 10 {
		assert.Equal(t, fmt.Sprint("text-", i), next.Records[fmt.Sprint("key-", i)].Text)
	}
	runtime.KeepAlive(next)
}
