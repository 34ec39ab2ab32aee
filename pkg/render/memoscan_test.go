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
