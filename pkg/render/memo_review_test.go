package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// Regression tests of incremental rendering, one per hole a review found
// (each failed before its fix; the comments describe the hole): each
// drives a short, fixed sequence of store states through a recording
// engine and compares every render with a full render of a fresh engine.

// reviewStores returns a store.Set of ingresses (and services when given),
// indexed by namespace and name. The objects are the given maps, so two
// sets built from the same maps hold the same objects (by identity).
func reviewStores(t testing.TB, ings []map[string]any, svcs ...map[string]any) store.Set {
	t.Helper()
	set := store.Set{"ingresses": newFakeReader(t, nsName, ings...)}
	set["services"] = newFakeReader(t, nsName, svcs...)
	return set
}

// checkIncremental records a render of states[0], then renders every state
// incrementally (not recording, then recording) and from scratch, and
// requires the same result.
func checkIncremental(t *testing.T, cfg string, opts []specOpt, states ...store.Set) {
	t.Helper()
	full, incr := mustEngine(t, cfg, opts...), mustEngine(t, cfg, opts...)
	render(t, incr, states[0], true)
	for i, st := range states {
		want := render(t, full, st, false)
		for _, rec := range []bool{false, true} {
			before := incr.MemoStats()
			got := render(t, incr, st, rec)
			after := incr.MemoStats()
			require.Equal(t, want, got, "state %d, recording %v (replayed %d, ran %d)", i, rec,
				after.Replayed-before.Replayed, after.Ran-before.Ran)
		}
	}
}

func reviewIngress(ns, name string) map[string]any {
	return ingress(ns, name, name+".example.com", name)
}

// An outer variable the body only assigns (never reads) and that holds a
// map is fingerprinted as 'j', so its value is not part of the key; finish
// records it as unchanged when the recorded iteration assigned the map it
// already held (two Ingresses of one namespace look up the same Service),
// and memoOut then keeps whatever the variable holds in the replaying
// render.
func TestMemoReviewUnchangedFinalOfUnkeyedVariable(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	svc := service("a", "s")
	cfg := `{{ $svc := dict }}{{ range $i := .resources.ingresses.Each }}` +
		`{{ $svc = $.resources.services.Get $i.metadata.namespace "s" }}{{ end }}svc={{ field $svc "metadata.name" }}`
	checkIncremental(t, cfg, nil,
		reviewStores(t, []map[string]any{x, y}, svc),
		reviewStores(t, []map[string]any{y}, svc)) // delete x: y replays "unchanged"
}

// htcMemoLeave is grafted at the end of the body, so it reads a variable
// the body declared with the name of an outer variable it assigned: the
// recorded final is the local's value.
func TestMemoReviewShadowedAssignedVariable(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	cfg := `{{ $n := 0 }}{{ range $i := .resources.ingresses.Each }}{{ $n = add1 $n }}{{ $n := 100 }}{{ end }}n={{ $n }}`
	st := reviewStores(t, []map[string]any{x, y})
	checkIncremental(t, cfg, nil, st, st)
}

// A map that is both an outer variable read only through get/hasKey/set
// ('j' in the key) and reachable natively through another outer variable
// (an alias, or a map that holds it) is fingerprinted as a back-reference:
// its content is in neither the key nor the journal.
func TestMemoReviewAliasOfJournaledMap(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	for name, cfg := range map[string]string{
		"alias": `{{ $seen := dict }}{{ $alias := $seen }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ $_ := set $seen $i.metadata.name true }}{{ len $alias }} {{ end }}`,
		"nested": `{{ $seen := dict }}{{ $ctx := dict "seen" $seen }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ $_ := set $seen $i.metadata.name true }}{{ len $ctx.seen }} {{ end }}`,
		"element": `{{ $seen := dict }}{{ range $i := .resources.ingresses.Each }}{{ $_ := set $seen $i.metadata.name true }}{{ end }}` +
			`{{ range $e := each (list $seen) }}{{ $_ := set $seen "z" 1 }}{{ len $e }}{{ end }}`,
	} {
		t.Run(name, func(t *testing.T) {
			checkIncremental(t, cfg, nil,
				reviewStores(t, []map[string]any{x, y}),
				reviewStores(t, []map[string]any{y}))
		})
	}
}

// The static analysis lets a pipeline that declares a variable take a
// journaled function's result (a shared map), but in if, with, range and
// template the value is also used: its truth, the dot, the iteration.
// That native read of the shared map is neither keyed nor validated.
func TestMemoReviewDeclaredBranchPipelineReadsSharedMap(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	write := `{{ $w := get $r "all" }}{{ $_ := set $w $i.metadata.name 1 }}`
	cases := map[string]struct {
		cfg  string
		opts []specOpt
	}{
		"if":    {cfg: `{{ range $i := .resources.ingresses.Each }}{{ if $s := get $r "all" }}some{{ else }}none{{ end }} ` + write + `{{ end }}`},
		"with":  {cfg: `{{ range $i := .resources.ingresses.Each }}{{ with $s := get $r "all" }}{{ len . }}{{ end }} ` + write + `{{ end }}`},
		"range": {cfg: `{{ range $i := .resources.ingresses.Each }}{{ range $s := get $r "all" }}+{{ end }} ` + write + `{{ end }}`},
		"template": {cfg: `{{ range $i := .resources.ingresses.Each }}{{ template "count" $s := get $r "all" }} ` + write + `{{ end }}`,
			opts: []specOpt{withSnippet("count", `{{ len . }}`)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkIncremental(t, `{{ $r := dict "all" dict }}`+c.cfg, c.opts,
				reviewStores(t, []map[string]any{x, y}),
				reviewStores(t, []map[string]any{y}))
		})
	}
}

// sortAlpha sorts a []string in place (sprig's strslice returns it as is):
// (1) a body that sorts an outer list changes it, which a replay does not;
// (2) a recorded []string (an outer variable's final) is kept by reference
// in the table and handed to every replaying render, so sorting it after
// the loop changes the table (and races between concurrent renders).
func TestMemoReviewSortAlphaMutatesStringLists(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	st := reviewStores(t, []map[string]any{x, y})
	t.Run("outer list sorted in the body", func(t *testing.T) {
		cfg := `{{ $s := splitList "," "b,a" }}{{ range $i := .resources.ingresses.Each }}` +
			`{{ if eq $i.metadata.name "x" }}{{ $_ := sortAlpha $s }}{{ end }}{{ end }}{{ join "," $s }}`
		checkIncremental(t, cfg, nil, st, st)
	})
	t.Run("recorded final sorted after the loop", func(t *testing.T) {
		cfg := `{{ $h := list }}{{ range $i := .resources.ingresses.Each }}{{ $h = splitList "," "b,a" }}{{ end }}` +
			`{{ join "," $h }};{{ join "," (sortAlpha $h) }}`
		checkIncremental(t, cfg, nil, st, st)
	})
}

// A get result's aliasing with the other maps the body reaches is checked
// only when the recording saw an alias (op.off): a replay in which the map
// get returns is also a natively read outer map (keyed by its content at
// entry) applies the recorded set to it, but keeps the output the body
// produced reading the map without that write.
func TestMemoReviewGetResultAliasesNativeMap(t *testing.T) {
	x, y, z := reviewIngress("a", "x"), reviewIngress("a", "y"), reviewIngress("a", "z")
	cfg := `{{ $n := dict }}{{ $r := dict "a" (ternary $n dict (gt (len .resources.ingresses.List) 2)) }}` +
		`{{ range $i := .resources.ingresses.Each }}{{ $x := get $r "a" }}{{ $_ := set $x $i.metadata.name 1 }}{{ len $n }} {{ end }}`
	checkIncremental(t, cfg, nil,
		reviewStores(t, []map[string]any{x, y}),
		reviewStores(t, []map[string]any{x, y, z}))
}

// Source map: within (each) pushes an element's object only when a store
// returned it earlier in the render (tracker.stores). The recording keeps
// the push it saw (none, or the object), not the condition, so a replay
// in a render where that differs attributes the output differently.
func TestMemoReviewSourceMapDependsOnEarlierReturns(t *testing.T) {
	x, y := reviewIngress("a", "x"), reviewIngress("a", "y")
	svc := service("a", "s")
	cfg := `{{ if gt (len .resources.ingresses.List) 1 }}{{ $_ := .resources.services.Fetch }}{{ end }}` +
		`{{ range $i := .resources.ingresses.Each }}{{ range $s := each $.resources.services.List }}{{ $s.metadata.name }}
{{ end }}{{ end }}`
	checkIncremental(t, cfg, nil,
		reviewStores(t, []map[string]any{x}, svc),
		reviewStores(t, []map[string]any{x, y}, svc))
	// And the other way round: the recording pushed the service.
	checkIncremental(t, cfg, nil,
		reviewStores(t, []map[string]any{x, y}, svc),
		reviewStores(t, []map[string]any{x}, svc))
}

// Which stores exist is read without a store method (a nil
// *ResourceStore is false), so it is neither keyed nor journaled.
func TestMemoReviewStorePresence(t *testing.T) {
	x := reviewIngress("a", "x")
	cfg := `{{ range $i := .resources.ingresses.Each }}{{ if $.resources.services }}svc{{ else }}none{{ end }}{{ end }}`
	with := reviewStores(t, []map[string]any{x})
	without := store.Set{"ingresses": with["ingresses"]}
	checkIncremental(t, cfg, nil, with, without)
}

// The scratch budget a replay charges is what the recorded iteration
// charged, but append's charge depends on hidden state (tails: in place
// when its list is the longest of its array, a full copy otherwise). A
// replayed iteration does not update tails, so the next live iteration
// appends in place where a full render copies: the incremental render
// uses less of the budget and succeeds where the full render fails with a
// *LimitError (nice-to-have per the brief, but it flips admission).
func TestMemoReviewScratchDependsOnAppendTails(t *testing.T) {
	x, y, y2, z := reviewIngress("a", "x"), reviewIngress("a", "y"), reviewIngress("a", "y"), reviewIngress("a", "z")
	const maxBytes = 100
	run := func(e *Engine, st store.Set, record bool) string {
		_, err := e.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", MaxBytes: maxBytes, Record: record})
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	s0 := reviewStores(t, []map[string]any{x, y})
	s1 := reviewStores(t, []map[string]any{x, y2, z}) // y replaced by an equal but new object
	var diffs []string
	for pad := range 8 {
		cfg := strings.Repeat(`{{ $_ := dict }}`, pad) + `{{ $l := list }}{{ $l = append $l "q" }}` +
			`{{ range $i := .resources.ingresses.Each }}{{ $x := append $l "a" }}{{ end }}`
		full, incr := mustEngine(t, cfg), mustEngine(t, cfg)
		if run(incr, s0, true) != "ok" {
			continue
		}
		want, got := run(full, s1, false), run(incr, s1, false)
		if want != got {
			diffs = append(diffs, fmt.Sprintf("pad %d: full %q, incremental %q", pad, want, got))
		}
	}
	require.Empty(t, diffs)
}
