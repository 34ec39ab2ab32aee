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

// Asking whether a map is owned allocates nothing: the fragments ask it of
// every store object a key or a frozen value holds, and a weak handle made
// per question (weak.Make allocates one for each object it is first asked
// about) cost an allocation and a lock of the runtime's specials per
// object and render.
func TestAskingAboutAMapTheRenderDidNotMakeAllocatesNothing(t *testing.T) {
	s := newRenderState(nil, "")
	s.own(map[string]any{"mine": true})
	objects := make([]map[string]any, 100)
	for i := range objects {
		objects[i] = map[string]any{"i": i}
	}
	allocs := testing.AllocsPerRun(10, func() {
		for _, o := range objects {
			if s.isOwned(o) {
				t.Fatal("a store object is not owned")
			}
		}
	})
	assert.Zero(t, allocs, "allocations per 100 questions")
}

// A map at an address the set holds an entry for is owned only when the
// entry's weak pointer is to that map: an owned map that was collected
// leaves its entry behind, and a map the render did not make can take its
// address. (The entry is made by hand here: waiting for the allocator to
// reuse an address is a test that may never see it.)
func TestAMapAtTheAddressOfAnotherOwnedMapIsNotOwned(t *testing.T) {
	s := newRenderState(nil, "")
	theirs := map[string]any{"theirs": true}
	gone := new(byte) // stands for the collected map's header
	s.owned[ownedKey(theirs)] = ownedMap{id: weak.Make(gone), seq: 1}
	assert.False(t, s.isOwned(theirs), "a map the render did not make is not owned, whatever its address")
	assert.Error(t, s.modifiable("set", theirs))
	runtime.KeepAlive(gone)
	mine := s.own(map[string]any{"mine": true})
	assert.True(t, s.isOwned(mine))
	assert.NoError(t, s.modifiable("set", mine))
}
