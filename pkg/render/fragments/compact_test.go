package fragments

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// madeRecord is a record as a render makes it: each string and list its
// own allocation.
func madeRecord(i int) *Record {
	obj := map[string]any{"name": fmt.Sprint("o", i)}
	return &Record{
		Text:     strings.Repeat(fmt.Sprint("line ", i, "\n"), 3),
		Reads:    []Read{{Store: "apps", Call: StoreCall{Method: "Get", Keys: []string{"ns", fmt.Sprint("a", i)}, Objs: []map[string]any{obj}}}},
		Emits:    []Emission{{Channel: "c", Key: fmt.Sprint("k", i), Value: fmt.Sprint("v", i)}, {Channel: "c", Key: "m", Value: obj}},
		Files:    []AddedFile{{Kind: bundle.KindMap, Name: fmt.Sprint("f", i), Text: "x y\n", Owner: obj}},
		Warnings: []bundle.Warning{{Message: fmt.Sprint("w", i)}},
		Scratch:  int64(i),
		Item:     obj,
		Held:     []unsafe.Pointer{mapPtr(obj)},
	}
}

// keptStrings are the strings r keeps that Compact copies.
func keptStrings(r *Record) []string {
	out := []string{r.Text}
	for _, rd := range r.Reads {
		out = append(out, rd.Call.Keys...)
	}
	for _, e := range r.Emits {
		out = append(out, e.Key)
		if s, ok := e.Value.(string); ok {
			out = append(out, s)
		}
	}
	for _, f := range r.Files {
		out = append(out, f.Name, f.Text)
	}
	for _, w := range r.Warnings {
		out = append(out, w.Message)
	}
	return out
}

// sameContent asserts that c is r field by field, but for where it is
// stored.
func sameContent(t *testing.T, r, c *Record) {
	t.Helper()
	want, got := *r, *c
	want.gen, want.genIndex, want.stored, got.gen, got.genIndex, got.stored = nil, 0, 0, nil, 0, 0
	assert.Equal(t, want, got)
	assert.Equal(t, mapPtr(r.Item.(map[string]any)), mapPtr(c.Item.(map[string]any)), "the item is the same map")
	assert.Equal(t, mapPtr(r.Reads[0].Call.Objs[0]), mapPtr(c.Reads[0].Call.Objs[0]), "the objects read are the same maps")
}

// TestCompactKeepsTheRecordsAStringArenaAndAListEach: the records a render
// made are replaced by equal copies whose strings all lie in one arena
// and whose records, reads and emits each lie in one list, so that no
// small object of the render stays alive for them; the records are left
// as they were (another table, a bundle's source map may hold them).
func TestCompactKeepsTheRecordsAStringArenaAndAListEach(t *testing.T) {
	tbl := &Table{Records: map[string]*Record{}}
	orig, before := map[string]*Record{}, map[string]Record{}
	for i := range 5 {
		k := fmt.Sprint("k", i)
		tbl.Records[k] = madeRecord(i)
		orig[k], before[k] = tbl.Records[k], *tbl.Records[k]
	}
	moved := tbl.Compact()
	require.Len(t, moved, 5)
	var lo, hi uintptr
	var total int
	for k, c := range tbl.Records {
		assert.Same(t, c, moved[orig[k]])
		assert.NotSame(t, orig[k], c)
		sameContent(t, orig[k], c)
		assert.Equal(t, before[k], *orig[k], "the record is left alone")
		for _, s := range keptStrings(c) {
			p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
			if lo == 0 || p < lo {
				lo = p
			}
			hi = max(hi, p+uintptr(len(s)))
			total += len(s)
		}
	}
	assert.Equal(t, uintptr(total), hi-lo, "every string kept is in one arena, back to back")
	for name, list := range map[string]struct {
		at   func(*Record) uintptr
		step uintptr // between two records' first elements
	}{
		"records": {func(r *Record) uintptr { return uintptr(unsafe.Pointer(r)) }, unsafe.Sizeof(Record{})},
		"reads":   {func(r *Record) uintptr { return uintptr(unsafe.Pointer(&r.Reads[0])) }, unsafe.Sizeof(Read{})},
		"emits":   {func(r *Record) uintptr { return uintptr(unsafe.Pointer(&r.Emits[0])) }, 2 * unsafe.Sizeof(Emission{})},
		"keys":    {func(r *Record) uintptr { return uintptr(unsafe.Pointer(&r.Reads[0].Call.Keys[0])) }, 2 * unsafe.Sizeof("")},
	} {
		var lo, hi uintptr
		for _, c := range tbl.Records {
			p := list.at(c)
			if lo == 0 || p < lo {
				lo = p
			}
			hi = max(hi, p)
		}
		assert.Equal(t, 4*list.step, hi-lo, "the %s are one list, back to back", name)
	}
	c := tbl.Records["k0"]
	assert.Equal(t, len(c.Reads), cap(c.Reads), "a copy's lists are full: appending copies them")
}

// TestCompactCopiesOnlyWhatIsNewUntilHalfIsDead: a table whose records
// are all compacted is left as it is; a new record is copied alone into
// a generation of its own; once the generations the table holds keep
// more bytes of records it no longer holds than it holds, every record is
// copied into one new generation.
func TestCompactCopiesOnlyWhatIsNewUntilHalfIsDead(t *testing.T) {
	tbl := &Table{Records: map[string]*Record{}}
	for i := range 10 {
		tbl.Records[fmt.Sprint("k", i)] = madeRecord(i)
	}
	tbl.Compact()
	first := tbl.Records["k0"].compacted()
	require.NotNil(t, first)

	next := &Table{Records: map[string]*Record{}}
	for k, r := range tbl.Records {
		next.Records[k] = r
	}
	assert.Nil(t, next.Compact(), "nothing new")
	next.Records["k9"] = madeRecord(99) // a fragment ran again
	moved := next.Compact()
	require.Len(t, moved, 1)
	assert.NotSame(t, first, next.Records["k9"].compacted())
	assert.Same(t, first, next.Records["k0"].compacted(), "the others stay")

	last := &Table{Records: map[string]*Record{}}
	for i := range 4 { // 6 of the first 10 records are gone
		last.Records[fmt.Sprint("k", i)] = tbl.Records[fmt.Sprint("k", i)]
	}
	assert.Len(t, last.Compact(), 4)
	g := last.Records["k0"].compacted()
	require.NotNil(t, g)
	assert.NotSame(t, first, g)
	for k, r := range last.Records {
		assert.Same(t, g, r.compacted(), k)
		sameContent(t, tbl.Records[k], r)
	}
}

// BenchmarkCompactOneNewRecord: what Compact costs a recording render
// that ran one fragment of 20,000 (the live loop's round after one
// object changed): a look at every record, one copied.
func BenchmarkCompactOneNewRecord(b *testing.B) {
	const n = 20000
	kept := &Table{Records: map[string]*Record{}}
	for i := range n {
		kept.Records[fmt.Sprint("k", i)] = madeRecord(i)
	}
	kept.Compact()
	for b.Loop() {
		b.StopTimer()
		t := &Table{Records: make(map[string]*Record, n)}
		for k, r := range kept.Records {
			t.Records[k] = r
		}
		t.Records["k7"] = madeRecord(7)
		b.StartTimer()
		if len(t.Compact()) != 1 {
			b.Fatal("want one record copied")
		}
	}
}
