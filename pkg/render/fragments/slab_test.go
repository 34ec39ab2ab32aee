package fragments

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestAKeptRecordHoldsWhatTheRecordHeld: a record kept in a table's slab
// equals the record the fragment ran into, field by field, with lists of
// exactly their length, and its strings are copies (the render's buffer
// may be written again).
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

// TestATableCopiesTheRecordsOfASlabItUsesLessThanHalfOf: at its end, a
// table copies into its own slab the records it holds of another table's
// slab when it holds fewer than half of that slab's records, and keeps
// them where they are otherwise; the copies hold what the records held.
func TestATableCopiesTheRecordsOfASlabItUsesLessThanHalfOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reused int // of the 10 records of the first table
		copied bool
	}{
		{name: "all reused", reused: 10, copied: false},
		{name: "half reused", reused: 5, copied: false},
		{name: "fewer than half reused", reused: 4, copied: true},
		{name: "one reused", reused: 1, copied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := NewTable("/b", 1, store.Set{}, 0)
			for i := range 10 {
				k := fmt.Sprint(i)
				first.Add([]byte(k), first.Keep(&Record{Emits: []Emission{{Channel: "c", Key: k}}}, []byte(k)))
			}
			first.End()
			next := NewTable("/b", 1, store.Set{}, 0)
			for i := range tc.reused {
				k := fmt.Sprint(i)
				next.Add([]byte(k), first.Records[k])
			}
			next.Add([]byte("new"), next.Keep(&Record{}, []byte("new")))
			next.End()
			for i := range tc.reused {
				k := fmt.Sprint(i)
				got := next.Records[k]
				require.NotNil(t, got)
				assert.Equal(t, tc.copied, got != first.Records[k], k)
				assert.Equal(t, k, got.Text)
				assert.Equal(t, []Emission{{Channel: "c", Key: k}}, got.Emits)
				wantSlab := first.slab
				if tc.copied {
					wantSlab = next.slab
				}
				assert.Same(t, wantSlab, got.slab, k)
			}
			for i, o := range next.order {
				assert.Same(t, next.Records[o.key], o.rec, "order %d", i)
			}
		})
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
		first.Add([]byte(k), first.Keep(&Record{}, []byte(fmt.Sprint("text-", i))))
	}
	first.End()
	next := NewTable("/b", 1, store.Set{}, 0)
	for _, o := range first.order {
		next.Add([]byte(o.key), o.rec)
	}
	next.End()
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
