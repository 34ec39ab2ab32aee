package fragments

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builtNothing is the Owned of a render that built no map.
func builtNothing(map[string]any) bool { return false }

// TestFragmentKeysAreNotEachOthersPrefixes: the key of a list is not the
// key of another list with a part moved from one element to the next, and
// a fragment's name and dict key cannot run into its item.
func TestFragmentKeysAreNotEachOthersPrefixes(t *testing.T) {
	fp := func(name, key string, v any) string {
		k, err := AppendKey(nil, name, key, v, builtNothing)
		require.NoError(t, err)
		return string(k)
	}
	assert.NotEqual(t, fp("f", "k", "q\x00n"), fp("f", "k\x00s3:q", nil))
	assert.NotEqual(t, fp("f\x00k", "", nil), fp("f", "k", nil))
	assert.NotEqual(t, fp("f", "", []any{"ab", "c"}), fp("f", "", []any{"a", "bc"}))
	assert.NotEqual(t, fp("f", "", []any{nil, "x"}), fp("f", "", []any{"x", nil}))
}

// TestFreezeCopiesWhatTheRenderBuiltAndKeepsTheRest: a map the render
// built and every list are copied, so that no later set reaches the
// fragment's item or an emitted value; any other map is kept as it is and
// noted in held.
func TestFreezeCopiesWhatTheRenderBuiltAndKeepsTheRest(t *testing.T) {
	shared := map[string]any{"a": "1"}
	built := map[string]any{"obj": shared, "l": []any{"x"}}
	owned := func(m map[string]any) bool { return mapPtr(m) == mapPtr(built) }
	var held []unsafe.Pointer
	v, err := Freeze([]any{built, shared}, owned, &held)
	require.NoError(t, err)
	frozen := v.([]any)
	m := frozen[0].(map[string]any)
	assert.Equal(t, built, m)
	assert.NotEqual(t, mapPtr(built), mapPtr(m), "a built map is copied")
	built["l"].([]any)[0] = "changed"
	assert.Equal(t, "x", m["l"].([]any)[0], "a list is copied")
	assert.Equal(t, mapPtr(shared), mapPtr(frozen[1].(map[string]any)), "a map the render did not build is kept")
	assert.Equal(t, []unsafe.Pointer{mapPtr(shared), mapPtr(shared)}, held)

	_, err = Freeze(func() {}, owned, nil)
	assert.ErrorContains(t, err, "cannot be a fragment's input")
}
