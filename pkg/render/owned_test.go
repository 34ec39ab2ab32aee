package render

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
)

// A map a render made and let go of is garbage while the render runs: the
// owned set (which maps set may modify) does not keep it alive. A render
// of 10,000 Gateway routes makes hundreds of megabytes of such maps; kept
// to its end, they set the process's peak heap and so its resident memory.
func TestTheOwnedSetDoesNotKeepARendersMapsAlive(t *testing.T) {
	s := newRenderState(nil, "")
	kept := s.own(map[string]any{"kept": true})
	dropped := ownAndDrop(s)
	runtime.GC()
	runtime.GC()
	assert.Nil(t, dropped.Value(), "a map the render let go of was collected")
	assert.True(t, s.isOwned(kept), "a map the render still holds stays owned")
	assert.False(t, s.isOwned(map[string]any{"kept": true}), "a map the render did not make is not owned")
	assert.Len(t, s.owned, 2, "the set still names both")
	runtime.KeepAlive(kept)
}

// ownAndDrop owns a new map and returns only a weak pointer to it.
//
//go:noinline
func ownAndDrop(s *renderState) weak.Pointer[byte] {
	return weak.Make((*byte)(mapPointer(s.own(map[string]any{"dropped": true}))))
}
