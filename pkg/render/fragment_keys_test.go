package render

import (
	"math"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/store"
)

// observe is what a template can tell of v: how toJson, printf %#v and %v,
// %T, kindOf, typeOf, toString and len see it.
var observe = template.Must(template.New("").Funcs(staticFuncs).Parse(
	`{{ toJson . }}|{{ printf "%#v" . }}|{{ printf "%v" . }}|{{ printf "%T" . }}|{{ kindOf . }}|{{ typeOf . }}|{{ toString . }}|{{ if kindIs "slice" . }}{{ len . }}{{ end }}`))

// keyValues are values a fragment's item can be, among them every pair
// that prints alike with one function and not with another: nil and empty
// lists and maps, typed nils, numbers of each type, -0, NaN.
func keyValues(s *renderState) []any {
	shared := map[string]any{"a": int64(1)} // a store object: not built by the render
	built := func(m map[string]any) map[string]any { return s.ownAll(m).(map[string]any) }
	return []any{
		nil, "", "a", "1", "n", true, false,
		int(1), int64(1), float64(1), int32(1), uint8(1), float32(1), uint64(1), int64(0),
		float64(0), math.Copysign(0, -1), math.NaN(), math.Copysign(math.NaN(), -1), math.Inf(1), math.Inf(-1),
		1.0000000000000002, float32(1.0000001),
		[]any(nil), []any{}, []string(nil), []string{}, []map[string]any(nil), []map[string]any{},
		[]any{nil}, []any{[]any(nil)}, []any{[]any{}}, []any{""}, []any{"a"}, []any{"a", ""}, []any{"", "a"},
		[]string{"a"}, []string{""}, []any{int64(1)}, []any{float64(1)}, []int{1}, []int(nil), [1]int{1}, [0]any{},
		[]any{map[string]any(nil)}, []any{map[string]string(nil)}, []any{map[string]string{}},
		map[string]any(nil), built(map[string]any{}), built(map[string]any{"a": nil}),
		built(map[string]any{"a": []any(nil)}), built(map[string]any{"a": []any{}}),
		built(map[string]any{"a": map[string]any(nil)}), built(map[string]any{"a": map[string]any{}}),
		built(map[string]any{"a": int64(1)}), built(map[string]any{"a": float64(1)}), built(map[string]any{"a": "1"}),
		built(map[string]any{"ab": ""}), built(map[string]any{"a": "b"}), built(map[string]any{"a": map[string]string{}}),
		map[string]string(nil), map[string]string{}, map[string]string{"a": ""}, map[string]string{"a": "1"},
		shared, []any{shared}, built(map[string]any{"a": shared}),
	}
}

func TestFragmentKeysTellApartWhatTemplatesTellApart(t *testing.T) {
	s := newRenderState(mustEngine(t, "x"), "")
	type keyed struct {
		v    any
		seen string
	}
	byKey := map[string]keyed{}
	for _, v := range keyValues(s) {
		k, err := fragments.AppendFingerprint(nil, v, s.isOwned)
		require.NoError(t, err, "%#v", v)
		frozen, err := fragments.Freeze(v, s.isOwned, nil, nil)
		require.NoError(t, err)
		var seen strings.Builder
		require.NoError(t, observe.Execute(&seen, frozen))
		if prev, ok := byKey[string(k)]; ok {
			assert.Equal(t, prev.seen, seen.String(), "%#v and %#v share the key %q", prev.v, v, k)
			continue
		}
		byKey[string(k)] = keyed{v: v, seen: seen.String()}
	}
	assert.Greater(t, len(byKey), 60, "nearly every value has a key of its own")
}

// TestAFragmentOverANilListIsNotAnEmptyListsRecord is issue 31's case: a
// fragment over `rest` of an empty list (a nil list) recorded, and the
// next render's item `rest` of a one-element list (an empty one): toJson
// prints null for one and [] for the other.
func TestAFragmentOverANilListIsNotAnEmptyListsRecord(t *testing.T) {
	apps := appsStore(t)
	require.NoError(t, apps.Add(app("a", "nil")))
	e := mustEngine(t, `{{ $v := (.resources.apps.Get "ns" "a").spec.v }}{{ fragments "f" (list (rest (ternary (list) (list 1) (eq $v "nil")))) }}`,
		withSnippet("f", `{{ toJson .item }}`))
	set := store.Set{"apps": apps}
	require.Equal(t, "null", renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true}))

	require.NoError(t, apps.Update(app("a", "empty")))

	assert.Equal(t, "[]", renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true}))
	assert.Equal(t, "[]", renderText(t, e, Input{Stores: set, BaseDir: "/b", Full: true}))
}
