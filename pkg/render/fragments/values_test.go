package fragments

import (
	"reflect"
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
	v, err := Freeze([]any{built, shared}, owned, &held, nil)
	require.NoError(t, err)
	frozen := v.([]any)
	m := frozen[0].(map[string]any)
	assert.Equal(t, built, m)
	assert.NotEqual(t, mapPtr(built), mapPtr(m), "a built map is copied")
	built["l"].([]any)[0] = "changed"
	assert.Equal(t, "x", m["l"].([]any)[0], "a list is copied")
	assert.Equal(t, mapPtr(shared), mapPtr(frozen[1].(map[string]any)), "a map the render did not build is kept")
	assert.Equal(t, []unsafe.Pointer{mapPtr(shared), mapPtr(shared)}, held)

	_, err = Freeze(func() {}, owned, nil, nil)
	assert.ErrorContains(t, err, "cannot be a fragment's input")
}

// TestFreezeKeepsEqualValuesOnce: with a Parts, equal values frozen one
// after the other are one copy, their lists too; values a template tells
// apart (int 1 and int64 1, a nil list and an empty one, []string and
// []any, two store objects of equal content) are not merged, and a value
// holding a map the render did not build holds that very map.
func TestFreezeKeepsEqualValuesOnce(t *testing.T) {
	objA, objB := map[string]any{"name": "a"}, map[string]any{"name": "a"}
	var built []map[string]any
	owned := func(m map[string]any) bool {
		for _, b := range built {
			if mapPtr(b) == mapPtr(m) {
				return true
			}
		}
		return false
	}
	build := func(v map[string]any) map[string]any { built = append(built, v); return v }
	parts := NewParts(0)
	freeze := func(v any) any {
		t.Helper()
		f, err := Freeze(v, owned, nil, parts)
		require.NoError(t, err)
		return f
	}
	parents := func() map[string]any {
		return build(map[string]any{"parents": []any{build(map[string]any{"accepted": true, "listeners": []any{"http"}})}, "unresolved": ""})
	}
	first, second := freeze(parents()).(map[string]any), freeze(parents()).(map[string]any)
	assert.Equal(t, mapPtr(first), mapPtr(second), "equal values are one copy")
	assert.Equal(t, unsafe.SliceData(first["parents"].([]any)), unsafe.SliceData(second["parents"].([]any)), "and so are their lists")
	assert.Equal(t, parents(), first)

	for _, pair := range [][2]any{
		{build(map[string]any{"n": 1}), build(map[string]any{"n": int64(1)})},
		{build(map[string]any{"l": []any(nil)}), build(map[string]any{"l": []any{}})},
		{build(map[string]any{"l": []string{"x"}}), build(map[string]any{"l": []any{"x"}})},
		{build(map[string]any{"obj": objA}), build(map[string]any{"obj": objB})},
		{[]any{objA}, []any{objB}},
		{[]any{}, []string{}},
	} {
		a, b := freeze(pair[0]), freeze(pair[1])
		assert.Equal(t, pair[0], a)
		assert.Equal(t, pair[1], b)
		if am, ok := a.(map[string]any); ok {
			assert.NotEqual(t, mapPtr(am), mapPtr(b.(map[string]any)), "%v and %v are not merged", pair[0], pair[1])
		}
		if al, ok := a.([]any); ok && len(al) > 0 {
			assert.Equal(t, mapPtr(pair[1].([]any)[0].(map[string]any)), mapPtr(b.([]any)[0].(map[string]any)), "each list holds its own store object")
		}
	}
	held := freeze(build(map[string]any{"obj": objB})).(map[string]any)
	assert.Equal(t, mapPtr(objB), mapPtr(held["obj"].(map[string]any)), "the map the render did not build is the one held")
	assert.Equal(t, "[]string", reflect.TypeOf(freeze([]string{})).String())
}
