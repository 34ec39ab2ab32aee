package fragments

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzSortedFromIsSorted: whatever the keys of the recording render's
// channel (prev, sorted or not, another channel's, with duplicates) and
// the keys fragments run now added (fresh, complete or not), SortedFrom
// returns the keys of the channel in order, as a sort does.
func FuzzSortedFromIsSorted(f *testing.F) {
	for seed := range uint64(24) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 3))
		key := func() string { return "k" + strconv.Itoa(r.IntN(40)) }
		m := map[string]any{}
		for range r.IntN(30) {
			m[key()] = true
		}
		var prev, fresh []string
		switch r.IntN(4) {
		case 0: // the channel's keys before some were added and removed
			old := maps.Clone(m)
			for range r.IntN(4) {
				k := key()
				if _, ok := m[k]; !ok && r.IntN(2) == 0 {
					delete(old, k)
					fresh = append(fresh, k)
				}
				delete(old, key()) // a key not in m, or one m keeps
			}
			for range r.IntN(3) {
				old[key()] = true
			}
			prev = slices.Sorted(maps.Keys(old))
			for k := range m {
				if _, ok := old[k]; !ok && r.IntN(3) > 0 {
					fresh = append(fresh, k) // some fresh keys missed
				}
			}
		case 1: // another channel's keys
			for range r.IntN(20) {
				prev = append(prev, key())
			}
			slices.Sort(prev)
			prev = slices.Compact(prev)
		case 2: // unsorted, with duplicates
			for range r.IntN(20) {
				prev = append(prev, key())
			}
		case 3: // none known
		}
		for range r.IntN(3) {
			fresh = append(fresh, key())
		}
		want := slices.Sorted(maps.Keys(m))
		got := SortedFrom(prev, fresh, m)
		if len(want) == 0 {
			assert.Empty(t, got)
			return
		}
		require.Equal(t, want, got, "prev %v fresh %v", prev, fresh)
	})
}

// TestAChannelSortsFromTheRecordingRendersKeys: a channel given the keys
// it had in the recording render, and holding one key more that a
// fragment run now added, and one less, returns its keys in order.
func TestAChannelSortsFromTheRecordingRendersKeys(t *testing.T) {
	c := NewChannel(0, []string{"a", "c", "e"})
	for _, e := range []struct {
		key string
		ran bool
	}{{"a", false}, {"e", false}, {"d", true}, {"a", true}} {
		require.NoError(t, c.Add(Emission{Channel: "ch", Key: e.key, Value: e.key}, 0, e.ran))
	}
	assert.Equal(t, []string{"a", "d", "e"}, c.Sorted())
	part, keys := c.ReadPrefix("d")
	assert.Equal(t, map[string]any{"d": "d"}, part)
	assert.Equal(t, []string{"d"}, keys)
	assert.Error(t, c.Add(Emission{Channel: "ch", Key: "b"}, 1, true), "a channel read takes no more")
}
