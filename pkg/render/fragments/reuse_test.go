package fragments

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

func app(v string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "App", "metadata": map[string]any{"namespace": "ns", "name": "a"}, "spec": map[string]any{"v": v}}}
}

// TestARecordIsReusedOnlyWhileItsReadsReturnWhatTheyReturned: a record
// that read app a applies while the store holds that object, runs again
// once a holds another object, applies with the object read now when the
// render says it renders alike, and runs again then too when its emitted
// values hold the object replaced.
func TestARecordIsReusedOnlyWhileItsReadsReturnWhatTheyReturned(t *testing.T) {
	for _, tc := range []struct {
		name     string
		update   bool // a is replaced after the recording render
		alike    bool // the render says the new a renders as the old one
		holdsOld bool // the record's emitted values hold the old a
		want     string
	}{
		{name: "unchanged store applies the record", want: "rec"},
		{name: "another object runs the fragment again", update: true, want: "none"},
		{name: "an object that renders alike applies it with the new object", update: true, alike: true, want: "fresh"},
		{name: "an alike object held by an emitted value runs it again", update: true, alike: true, holdsOld: true, want: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.New([]string{"metadata.namespace", "metadata.name"})
			require.NoError(t, err)
			require.NoError(t, s.Add(app("v1")))
			set := store.Set{"apps": s}
			old, _ := s.Get("ns", "a")
			tbl := NewTable("/b", 1, set, 0)
			rec := &Record{Text: "x", Reads: []Read{{Store: "apps", Call: StoreCall{Method: "Get", Keys: []string{"ns", "a"}, Objs: []map[string]any{old.Object}}}}}
			if tc.holdsOld {
				rec.Held = []unsafe.Pointer{mapPtr(old.Object)}
			}
			tbl.Records["k"] = rec
			tbl.End(nil)
			if tc.update {
				require.NoError(t, s.Update(app("v2")))
			}
			c := &Check{Steady: tbl.SteadyStores(set), Reader: func(k string) store.Reader { return set[k] },
				Alike: func(string, map[string]any, map[string]any) bool { return tc.alike }}

			got, alike := tbl.Reusable([]byte("k"), c)
			switch tc.want {
			case "rec":
				assert.Same(t, rec, got)
				assert.False(t, alike)
			case "none":
				assert.Nil(t, got)
			case "fresh":
				require.NotNil(t, got)
				assert.True(t, alike)
				now, _ := s.Get("ns", "a")
				assert.Equal(t, mapPtr(now.Object), mapPtr(got.Reads[0].Call.Objs[0]), "applied with the object read now")
				assert.Equal(t, mapPtr(old.Object), mapPtr(rec.Reads[0].Call.Objs[0]), "the table's record is left alone")
			}
			missing, _ := tbl.Reusable([]byte("other"), c)
			assert.Nil(t, missing, "no record, nothing to apply")
		})
	}
}

// TestRecordsAreFoundAsRecordsHoldsThem: a render asks for the keys of a
// recording render's table in any order and finds, for each, the record
// Records holds (a key recorded twice: the later record), by the recorded
// order when it asks in it, after an item added or changed or one gone,
// else by Records.
func TestRecordsAreFoundAsRecordsHoldsThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  []string
		next []int // Check.next after each ask: the position found in order + 1
	}{
		{name: "in the recorded order, by the order", ask: []string{"a", "b", "c", "d", "c"}, next: []int{1, 2, 3, 4, 5}},
		{name: "an item added", ask: []string{"a", "new", "b", "c"}, next: []int{1, 1, 2, 3}},
		{name: "an item changed", ask: []string{"a", "changed", "c", "d"}, next: []int{1, 1, 3, 4}},
		{name: "an item gone", ask: []string{"a", "c", "d"}, next: []int{1, 3, 4}},
		{name: "out of order, by Records", ask: []string{"d", "a", "b"}, next: []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := NewTable("/b", 1, store.Set{}, 0)
			recs := map[string]*Record{}
			for _, k := range []string{"a", "b", "c", "d", "c"} { // c twice: the later replaces
				recs[k] = &Record{Text: k}
				tbl.Add([]byte(k), recs[k], Place{Out: -1})
			}
			tbl.End(nil)
			c := &Check{}
			for i, k := range tc.ask {
				got, _ := tbl.Reusable([]byte(k), c)
				if recs[k] == nil {
					assert.Nil(t, got, k)
				} else {
					assert.Same(t, recs[k], got, k)
				}
				assert.Equal(t, tc.next[i], c.next, "after %s", k)
			}
		})
	}
}

// TestFirstEmittersAnswerAsTheScan: FirstEmitters (a key's first emitter
// by the channel's index, else the scan) answers as the scan of the
// table's order alone, for tables of records emitting keys on two
// channels (a key twice in one record, on both channels, in none),
// every upto and skipped positions before, at and after first emitters,
// asked twice (the index made, then shared).
func TestFirstEmittersAnswerAsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 34))
	chans, keys := []string{"c", "d"}, []string{"a", "b", "c", "d", "e", "f"}
	for round := range 200 {
		tbl := NewTable("/b", 1, store.Set{}, 0)
		n := 1 + rng.IntN(12)
		for i := range n {
			rec := &Record{}
			for range rng.IntN(5) {
				rec.Emits = append(rec.Emits, Emission{Channel: chans[rng.IntN(2)], Key: keys[rng.IntN(len(keys)-1)], Value: fmt.Sprint(i, rng.IntN(3))})
			}
			tbl.Add([]byte(fmt.Sprint("r", i)), rec, Place{Out: -1})
		}
		tbl.End(nil)
		for range 2 {
			for _, ch := range append(chans, "none") {
				ask := map[string]bool{}
				for _, k := range keys {
					if rng.IntN(2) == 0 {
						ask[k] = true
					}
				}
				var skip []int
				for i := range n {
					if rng.IntN(4) == 0 {
						skip = append(skip, i)
					}
				}
				upto := rng.IntN(n+1) - 1
				assert.Equal(t, tbl.scanFirstEmitters(ch, ask, upto, skip), tbl.FirstEmitters(ch, ask, upto, skip), "round %d channel %s upto %d skip %v", round, ch, upto, skip)
			}
		}
	}
}
