package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// Regression tests of incremental rendering from a second review, one per
// hole (each failed before its fix; the comments describe the hole).

// A variable declared in the List of an if (or with, or range) inside a
// memoized body is, for the static scan, also declared in the ElseList
// (parse.Tree keeps it in scope), but at run time the else branch does not
// see it: there the name is the outer variable. The else branch assigns
// (or reads) the outer variable, which is neither keyed nor a final.
func TestMemoReview2ElseBranchSeesOuterVariable(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y})
	for name, cfg := range map[string]string{
		"if assigns": `{{ $n := 0 }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ if eq $i.metadata.name "none" }}{{ $n := 5 }}{{ else }}{{ $n = add1 $n }}{{ end }}{{ end }}n={{ $n }}`,
		"range else": `{{ $n := 0 }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ range $r := list }}{{ $n := 5 }}{{ else }}{{ $n = add1 $n }}{{ end }}{{ end }}n={{ $n }}`,
	} {
		t.Run(name, func(t *testing.T) { checkIncremental(t, cfg, nil, st, st) })
	}
	t.Run("if reads", func(t *testing.T) {
		cfg := `{{ $n := len .resources.ingresses.List }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ if eq $i.metadata.name "none" }}{{ $n := 5 }}{{ else }}{{ $n }} {{ end }}{{ end }}`
		checkIncremental(t, cfg, nil, st, reviewStores(t, []map[string]any{x, y, reviewIngress("a", "z")}))
	})
}

// range $i = ... (assignment, not declaration) makes the range's
// variable an outer variable; the scan takes it for a local, so what the
// body leaves in it is not a final: a replayed last iteration leaves the
// element where the body would have left its own value.
func TestMemoReview2RangeAssignsOuterVariable(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y})
	cfg := `{{ $i := "" }}{{ range $i = .resources.ingresses.Each }}{{ $i = $i.metadata.name }}{{ end }}last={{ $i }}`
	checkIncremental(t, cfg, nil, st, st)
}

// A map read only through journaled functions ('j' in the key) that is
// also inside a map the body reads natively, when the native one comes
// first among the outer variables: the nested occurrence is written with
// its content, the 'j' one as just "j", so the key does not say whether
// the two are the same map. A recording where they are (the body's set
// shows through the native read) replays where they are not.
func TestMemoReview2JournaledMapNestedInEarlierNativeMap(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	cfg := `{{ $seen := dict }}{{ $ctx := dict "seen" (ternary $seen dict (eq (len .resources.ingresses.List) 1)) }}` +
		`{{ range $i := .resources.ingresses.Each }}{{ $c := $ctx }}{{ $_ := set $seen $i.metadata.name 1 }}{{ len $c.seen }} {{ end }}`
	checkIncremental(t, cfg, nil,
		reviewStores(t, []map[string]any{x}),
		reviewStores(t, []map[string]any{x, y}))
}

// checkIncrementalMax is checkIncremental with a bundle limit, comparing
// the error text (or "ok") only.
func checkIncrementalMax(t *testing.T, cfg string, maxBytes int64, states ...store.Set) {
	t.Helper()
	run := func(e *Engine, st store.Set, record bool) string {
		b, err := e.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", MaxBytes: maxBytes, Record: record})
		if err != nil {
			return err.Error()
		}
		return "ok: " + b.Config
	}
	full, incr := mustEngine(t, cfg), mustEngine(t, cfg)
	first := run(incr, states[0], true)
	require.True(t, strings.HasPrefix(first, "ok"), first)
	for i, st := range states {
		want := run(full, st, false)
		for _, rec := range []bool{false, true} {
			require.Equal(t, want, run(incr, st, rec), "state %d, recording %v", i, rec)
		}
	}
}

// The scratch a replay charges is what the iteration charged when it was
// recorded, and append's charge depends on hidden state (tails): only the
// first iteration that appends to an outer list appends in place. Entries
// survive in the table when replayed, so after a few renders in which a
// new Ingress sorts first, every iteration replays an entry recorded as
// "first" (cheap) where a full render copies the list in each iteration
// but the first. The incremental render stays far below half the scratch
// budget (no re-render without replays), the full render exceeds it.
func TestMemoReview2ScratchOfEntriesRecordedFirst(t *testing.T) {
	elems := strings.TrimSpace(strings.Repeat(`"a" `, 5))
	cfg := `{{ $l := append (list ` + elems + `) "z" }}{{ range $i := .resources.ingresses.Each }}{{ $y := append $l "q" }}{{ end }}`
	var states []store.Set
	var ings []map[string]any
	for k := 9; k >= 3; k-- {
		ings = append([]map[string]any{reviewIngress("a", fmt.Sprintf("n%02d", k))}, ings...)
		states = append(states, reviewStores(t, ings))
	}
	checkIncrementalMax(t, cfg, 250, states...)
}

// {{ break }} leaves a range over an iterator by panicking through it: the
// iterator's pop (Each) or within's end (each) never runs and
// tracker.unwinding truncates the stack of current objects without
// recording it. A memoized body can reach such a range through a template
// call (the scan only rejects break in the body itself): the recording
// keeps the push and not its end, and a replay leaves the object current
// for the rest of the output, which then is attributed to it.
func TestMemoReview2BreakInCalledTemplateLeavesObjectCurrent(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y}, service("a", "s1"), service("a", "s2"))
	for name, snippet := range map[string]string{
		"Each": `{{ range $s := .Each }}{{ $s.metadata.name }}{{ break }}{{ end }}`,
		"each": `{{ range $s := each .List }}{{ $s.metadata.name }}{{ break }}{{ end }}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := `{{ $_ := .resources.services.Fetch }}{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}:{{ template "first" $.resources.services }}
{{ end }}after
`
			checkIncremental(t, cfg, []specOpt{withSnippet("first", snippet)}, st, st)
		})
	}
}

// The same leak misattributes a later failure (AttributedError.Objects).
func TestMemoReview2BreakInCalledTemplateMisattributesFailure(t *testing.T) {
	x, y, z := reviewIngress("a", "x"), reviewIngress("a", "y"), reviewIngress("a", "z")
	svcs := []map[string]any{service("a", "s1"), service("a", "s2")}
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}:{{ template "first" $.resources.services }}
{{ end }}{{ if gt (len .resources.ingresses.List) 2 }}{{ fail "boom" }}{{ end }}`
	opts := []specOpt{withSnippet("first", `{{ range $s := .Each }}{{ $s.metadata.name }}{{ break }}{{ end }}`)}
	full, incr := mustEngine(t, cfg, opts...), mustEngine(t, cfg, opts...)
	render(t, incr, reviewStores(t, []map[string]any{x, y}, svcs...), true)
	st := reviewStores(t, []map[string]any{x, y, z}, svcs...)
	want := render(t, full, st, false)
	require.Equal(t, "render: boom", want.err)
	require.Equal(t, want, render(t, incr, st, false))
}

// A nil []any (sprig's initial and rest of an empty list) is not an empty
// []any: toJson prints null for it. The snapshot of a final (and of a set
// value) turns it into an empty list, and the fingerprint writes both as
// "[0]", so an iteration recorded with one replays with the other.
func TestMemoReview2NilListIsNotEmptyList(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y})
	t.Run("final", func(t *testing.T) {
		cfg := `{{ $l := list "a" }}{{ range $i := .resources.ingresses.Each }}{{ $l = initial (list) }}{{ end }}{{ toJson $l }}`
		checkIncremental(t, cfg, nil, st, st)
	})
	t.Run("set value", func(t *testing.T) {
		cfg := `{{ $d := dict }}{{ range $i := .resources.ingresses.Each }}{{ $_ := set $d $i.metadata.name (rest (list)) }}{{ end }}{{ toJson $d }}`
		checkIncremental(t, cfg, nil, st, st)
	})
	t.Run("key", func(t *testing.T) {
		cfg := `{{ $l := ternary (initial (list)) (list) (eq (len .resources.ingresses.List) 2) }}` +
			`{{ range $i := .resources.ingresses.Each }}{{ toJson $l }} {{ end }}`
		checkIncremental(t, cfg, nil, st, reviewStores(t, []map[string]any{x, y, reviewIngress("a", "z")}))
	})
}

// The key says nothing of the bundle limit, and a replay checks only the
// budgets it charges, not the per-value limit (one value no larger than
// MaxBytes): an iteration recorded under a large limit replays under a
// small one where running it fails.
func TestMemoReview2ReplayIgnoresValueLimit(t *testing.T) {
	x := reviewIngress("a", "x")
	st := reviewStores(t, []map[string]any{x})
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ len (repeat 150 "a") }}{{ end }}`
	full, incr := mustEngine(t, cfg), mustEngine(t, cfg)
	run := func(e *Engine, maxBytes int64, record bool) string {
		b, err := e.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", MaxBytes: maxBytes, Record: record})
		if err != nil {
			return err.Error()
		}
		return "ok: " + b.Config
	}
	require.Equal(t, "ok: 150", run(incr, 0, true))
	require.Equal(t, run(full, 100, false), run(incr, 100, false))
}
