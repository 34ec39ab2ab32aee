package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestWrappedLoopsReplayBeforeTheTemplate checks that a loop without an
// else branch replays its unchanged iterations itself (the template sees
// only the changed one), that the outer variables the body assigns hold,
// in the iterations that run and after the loop, what they would after a
// full render, and that a loop with an else branch replays through
// htcMemoEnter alone.
func TestWrappedLoopsReplayBeforeTheTemplate(t *testing.T) {
	body := `{{ if $i.metadata.labels }}{{ $last = $i.metadata.name }}{{ end }}{{ $count = add $count 1 }}{{ $i.metadata.name }}:{{ $count }}:{{ $last }},`
	cases := []struct {
		name   string
		cfg    string
		looped int64 // iterations the wrapped loop replays in the changed state
	}{
		{"wrapped", `{{ $last := "" }}{{ $count := 0 }}{{ range $i := .resources.ingresses.Each }}` + body + `{{ end }} {{ $last }} {{ $count }}`, 2},
		{"with an else branch", `{{ $last := "" }}{{ $count := 0 }}{{ range $i := .resources.ingresses.Each }}` + body + `{{ else }}none{{ end }} {{ $last }} {{ $count }}`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ings := []map[string]any{reviewIngress("a", "a"), reviewIngress("a", "b"), reviewIngress("a", "c"), reviewIngress("a", "d")}
			labelled := func(m map[string]any) map[string]any {
				m["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
				return m
			}
			labelled(ings[0])
			labelled(ings[2])
			before := reviewStores(t, ings)
			changed := append([]map[string]any{}, ings...)
			// b now sets $last: c's iteration, which reads it, runs too;
			// d's reads what it did ($last is c again).
			changed[1] = labelled(reviewIngress("a", "b"))
			after := reviewStores(t, changed)

			incr := mustEngine(t, c.cfg)
			render(t, incr, before, true)
			stats0, looped0 := incr.MemoStats(), incr.looped.Load()
			got := render(t, incr, after, false)
			stats1, looped1 := incr.MemoStats(), incr.looped.Load()
			want := render(t, mustEngine(t, c.cfg), after, false)
			require.Equal(t, want, got)
			assert.Contains(t, got.out, "a:1:a,b:2:b,c:3:c,d:4:c, c 4")
			assert.Equal(t, int64(2), stats1.Replayed-stats0.Replayed, "a and d replayed")
			assert.Equal(t, int64(2), stats1.Ran-stats0.Ran, "b and c ran")
			assert.Equal(t, c.looped, looped1-looped0, "replayed by the wrapped loop")
		})
	}
}

// TestRewriteWrapsRangesWithoutElse checks the text of the rewritten
// example: its loops iterate through htcMemoRange, take the assigned
// variables at the start of each body that runs and after the loop, and a
// range with an else branch is not wrapped.
func TestRewriteWrapsRangesWithoutElse(t *testing.T) {
	e := mustNew(t, exampleSpec(t))
	text := e.root.Lookup(bundle.ConfigFileName).Tree.Root.String()
	assert.Contains(t, text, `range $ing := htcMemoRange 0 (.resources.ingresses.Each) `)
	assert.Contains(t, text, `{{$default = htcMemoSync 0 `)
	assert.Contains(t, text, `{{$default = htcMemoDone 0 `)
	assert.Contains(t, text, `range $name, $b := htcMemoRange 1 (each $backends)`)
	assert.Contains(t, text, `range $slice := htcMemoRange 2 ($.resources.endpoints.Each $b.ns $b.svc.metadata.name)`)
	assert.Equal(t, 2, strings.Count(text, "htcMemoDone"), "the Ingress loop assigns $default, the EndpointSlice loop $n")

	e = mustEngine(t, `{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}{{ else }}none{{ end }}`)
	text = e.root.Lookup(bundle.ConfigFileName).Tree.Root.String()
	assert.Contains(t, text, "htcMemoEnter")
	assert.NotContains(t, text, "htcMemoRange")
}

// TestWrappedLoopOverAValueNotAnIterator checks that a wrapped range over
// something other than the iterators Each and each return (a map field
// named Each) iterates it as text/template does.
func TestWrappedLoopOverAValueNotAnIterator(t *testing.T) {
	cfg := `{{ $n := 0 }}{{ range $i := (dict "Each" (list 1 2 3)).Each }}{{ $n = add $n $i }}{{ end }}{{ $n }}`
	e := mustEngine(t, cfg)
	stores := store.Set{}
	render(t, e, stores, true)
	got := render(t, e, stores, false)
	assert.Equal(t, "6", strings.TrimSpace(got.out[strings.LastIndex(got.out, "\n")+1:]), got.out)
}
