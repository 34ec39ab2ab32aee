package render

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// Regression tests of incremental rendering from a third review, one per
// hole (each failed before its fix; the comments describe the hole).

// Regression tests of incremental rendering from a third review.

// A break that leaves an each whose element has no store object (within
// pushed nothing, opWithin's depth is -1) panics through within, so no
// opWithinEnd is recorded; opTruncate pops only the within entries whose
// depth is at or above the kept depth, which -1 never is. The stale entry
// stays on the replay's within stack and the enclosing each's end pops it
// instead of its own object: that object stays current after the replayed
// iteration and later output is attributed to it.
func TestMemoReview3BreakInEachWithoutObjectLeavesOuterObjectCurrent(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y}, service("a", "s1"), service("a", "s2"))
	cfg := `{{ $_ := .resources.services.Fetch }}{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}:{{ template "inner" $.resources.services.Fetch }}
{{ end }}after
`
	inner := `{{ range $a := each . }}{{ $a.metadata.name }}{{ range $b := each (list 1 2) }}{{ $b }}{{ break }}{{ end }};{{ end }}`
	checkIncremental(t, cfg, []specOpt{withSnippet("inner", inner)}, st, st)
}

// The same stale within entry misattributes a later failure: the ingress
// Each pops the stale service instead of its own ingress, so every
// replayed ingress stays current and the failure names them all.
func TestMemoReview3BreakInEachWithoutObjectMisattributesFailure(t *testing.T) {
	x, y, z := reviewIngress("a", "x"), reviewIngress("a", "y"), reviewIngress("b", "z")
	svcs := []map[string]any{service("a", "s1")}
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ template "t" $.resources.services.Fetch }}` +
		`{{ if eq $i.metadata.name "z" }}{{ fail "z" }}{{ end }}{{ end }}`
	opts := []specOpt{withSnippet("t", `{{ range $a := each . }}{{ range $b := each (list 1 2) }}{{ break }}{{ end }}{{ end }}`)}
	full, incr := mustEngine(t, cfg, opts...), mustEngine(t, cfg, opts...)
	render(t, incr, reviewStores(t, []map[string]any{x, y}, svcs...), true)
	st := reviewStores(t, []map[string]any{x, y, z}, svcs...)
	want := render(t, full, st, false)
	require.Equal(t, "[Ingress b/z]", want.objects)
	require.Equal(t, want, render(t, incr, st, false))
}

// A replay checks a recorded Get or Fetch by asking the store again with
// the recorded keys, not through ResourceStore.Get/Fetch, so it skips their
// check of the number of keys against the store's indexBy: a Get recorded
// as "not found" replays against a store whose index now has another
// number of expressions, where running the body fails.
func TestMemoReview3ReplaySkipsKeyCountCheck(t *testing.T) {
	x := reviewIngress("a", "x")
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ if $.resources.services.Get $i.metadata.namespace "none" }}y{{ else }}n{{ end }}{{ end }}`
	st0 := reviewStores(t, []map[string]any{x}, service("a", "s"))
	st1 := store.Set{"ingresses": st0["ingresses"], "services": newFakeReader(t, []string{"metadata.name"}, service("a", "s"))}
	checkIncremental(t, cfg, nil, st0, st1)
}

// A break out of an each nested in another each inside a recorded body:
// whether the outer each made its element current depends on what stores
// returned earlier in the render (a Service listed with List is not yet
// "returned" until Each fetches it), so a replay may push where the
// recording did not. The truncation a break records must count the
// running elements, not the depth of current objects; counting depth, the
// replay popped one object too many and panicked (slice bounds out of
// range). Found by the random template fuzzer.
func TestMemoReview3BreakAfterEachWhoseElementBecameAnObject(t *testing.T) {
	x, y, z, s := reviewIngress("b", "x"), reviewIngress("b", "y"), reviewIngress("a", "z"), service("a", "s")
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}{{ template "t" $.resources.services }}
{{ end }}after`
	snip := `{{ range $s := each .List }}{{ range $k, $v := each (dict "o" $s "n" 1) }}{{ $k }}{{ break }}{{ end }}{{ end }} {{ range $s := .Each }}{{ $s.metadata.name }}{{ end }}`
	checkIncremental(t, cfg, []specOpt{withSnippet("t", snip)},
		reviewStores(t, []map[string]any{x, y}, s), reviewStores(t, []map[string]any{x, y, z}, s))
}
