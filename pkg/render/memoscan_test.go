package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIncrementalLoopsCountsReplayableLoops checks which loops New
// rewrites for replay: loops over Each or each whose bodies use maps
// built before them only through get, hasKey, set and unset.
func TestIncrementalLoopsCountsReplayableLoops(t *testing.T) {
	each := func(body string) string {
		return `{{ $m := dict }}{{ range $i := .resources.ingresses.Each }}` + body + `{{ end }}`
	}
	cases := []struct {
		name              string
		cfg               string
		replayable, loops int
	}{
		{"get, hasKey, set, unset", each(`{{ if not (hasKey $m "a") }}{{ $_ := set $m "a" 1 }}{{ end }}{{ $x := get $m "b" }}{{ $_ := unset $m "c" }}`), 1, 1},
		{"a derived map used through set", each(`{{ $x := get $m "a" }}{{ $_ := set $x "k" 1 }}`), 1, 1},
		{"a derived map printed", each(`{{ $x := get $m "a" }}{{ $x }}`), 0, 1},
		{"a shared map's value printed", each(`{{ get $m "a" }}`), 0, 1},
		{"with over a shared map's value", each(`{{ with $x := get $m "a" }}{{ . }}{{ end }}`), 0, 1},
		{"break", each(`{{ break }}`), 0, 1},
		{"continue", each(`{{ continue }}`), 0, 1},
		{"an assigned outer variable also declared", `{{ $n := 0 }}{{ range $i := .resources.ingresses.Each }}{{ $n = 1 }}{{ $n := 2 }}{{ end }}`, 0, 1},
		{"each over a dict", `{{ range $k, $v := each (dict "a" 1) }}{{ $k }}{{ end }}`, 1, 1},
		{"a range over a list", `{{ range $i := .resources.ingresses.List }}{{ $i.metadata.name }}{{ end }}`, 0, 0},
		{"nested", each(`{{ range $s := $.resources.services.Each }}{{ $s.metadata.name }}{{ end }}`), 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replayable, loops := mustEngine(t, c.cfg).IncrementalLoops()
			assert.Equal(t, [2]int{c.replayable, c.loops}, [2]int{replayable, loops})
		})
	}
	replayable, loops := mustNew(t, exampleSpec(t)).IncrementalLoops()
	assert.Equal(t, [2]int{3, 3}, [2]int{replayable, loops}, "the example's loops over Ingresses, backends and EndpointSlices")
}

// TestAFailingReplayedRenderIsConfirmedInFull checks that no failure rests
// on a replay: a render that replayed iterations and failed renders again
// without replays (every iteration runs), and returns that render's error.
func TestAFailingReplayedRenderIsConfirmedInFull(t *testing.T) {
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ if not ($.resources.services.Get $i.metadata.namespace $i.metadata.name) }}` +
		`{{ fail (printf "Service '%s' not found" $i.metadata.name) }}{{ end }}{{ $i.metadata.name }}
{{ end }}`
	a, b, broken := reviewIngress("a", "a"), reviewIngress("a", "b"), reviewIngress("a", "zz")
	sa, sb := service("a", "a"), service("a", "b")
	good := reviewStores(t, []map[string]any{a, b}, sa, sb)
	bad := reviewStores(t, []map[string]any{a, b, broken}, sa, sb)
	e := mustEngine(t, cfg)
	render(t, e, good, true)
	before := e.MemoStats()
	got := render(t, e, bad, false)
	after := e.MemoStats()
	assert.Equal(t, "render: Service 'zz' not found", got.err)
	assert.Equal(t, int64(2), after.Replayed-before.Replayed, "a and b replayed first")
	assert.Equal(t, int64(1), after.Ran-before.Ran, "zz ran (the render without replays counts nothing)")
	assert.Equal(t, int64(1), after.Confirmed-before.Confirmed, "rendered again without replays")
	want := render(t, mustEngine(t, cfg), bad, false)
	assert.Equal(t, want, got)
}
