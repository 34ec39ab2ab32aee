package render

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSweepingTheOwnedSetDropsOnlyCollectedMaps: of the maps a render
// made, sweepOwned drops the entries of those collected and keeps those
// still held, which stay owned with their sequence; own sweeps once the
// set reaches twice what the last sweep left, so a render that makes many
// maps and keeps few holds a set of about what it keeps.
func TestSweepingTheOwnedSetDropsOnlyCollectedMaps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		made, kept int
	}{
		{name: "none kept", made: 100, kept: 0},
		{name: "some kept", made: 100, kept: 10},
		{name: "all kept", made: 100, kept: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRenderState(nil, "")
			var kept []map[string]any
			for i := range tc.made {
				m := s.own(map[string]any{"i": i})
				if i < tc.kept {
					kept = append(kept, m)
				}
			}
			runtime.GC()
			s.sweepOwned()
			assert.Len(t, s.owned, tc.kept)
			assert.Equal(t, 2*tc.kept, s.sweepAt)
			for i, m := range kept {
				seq, ok := s.ownedSeq(m)
				assert.True(t, ok, "map %d", i)
				assert.Equal(t, uint32(i+1), seq)
			}
			runtime.KeepAlive(kept)
		})
	}
	s := newRenderState(nil, "")
	for i := range 50 * minSweepOwned {
		s.own(map[string]any{"i": i})
		if i%minSweepOwned == 0 {
			runtime.GC()
		}
	}
	assert.Less(t, len(s.owned), 4*minSweepOwned, "own swept the set as it grew")
}
