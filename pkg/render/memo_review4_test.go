package render

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// Regression tests of incremental rendering from a fourth review, from a
// tenant's point of view (each failed before its fix; the comments
// describe the hole): what a tenant controls is the content of objects
// (names, labels, annotations, any field) and the order and timing of
// their changes, not the templates.

// annotatedIngress returns reviewIngress(ns, name) with annotations.
func annotatedIngress(ns, name string, ann map[string]any) map[string]any {
	ing := reviewIngress(ns, name)
	ing["metadata"].(map[string]any)["annotations"] = ann
	return ing
}

// sameValue compares scalars with ==, and -0.0 == 0.0 although they print
// differently ("-0" and "0"). A tenant writes "-0" where an annotation is
// read as a number (float64, fromJson): finish records an outer variable
// that went from 0 to -0 as unchanged, so a replay keeps 0 where running
// the body leaves -0. (readAgrees compares get results the same way, but
// a get result can only be the map argument of get, hasKey, set or unset,
// so a scalar's sign never shows.)
func TestMemoReview4NegativeZeroFinalUnchanged(t *testing.T) {
	x := annotatedIngress("a", "x", map[string]any{"haproxy.org/weight": "-0"})
	st := reviewStores(t, []map[string]any{x})
	cfg := `{{ $w := 0.0 }}{{ range $i := .resources.ingresses.Each }}` +
		`{{ $w = float64 (index $i.metadata.annotations "haproxy.org/weight") }}{{ end }}weight {{ $w }}`
	checkIncremental(t, cfg, nil, st, st)
}

// The key of an iteration holds the content of the outer values its body
// reads (strings in full: the 512-node limit counts values, not bytes),
// and neither the key nor the journal is charged to any budget. One outer
// string a tenant controls (here the first Ingress's snippet annotation,
// 100 KiB, well under the 256 KiB annotation limit) is copied into the key
// of every iteration: the table the live render leaves holds it once per
// Ingress, N times what the render itself built, far beyond the render's
// scratch budget (4 x MaxBytes), and every render (admissions included)
// copies and hashes N times its size.
func TestMemoReview4KeyBytesUncharged(t *testing.T) {
	const maxBytes = 256 << 10
	ings := []map[string]any{annotatedIngress("a", "aaa", map[string]any{
		"haproxy.org/global-snippet": strings.Repeat("x", 100<<10)})}
	for k := range 50 {
		ings = append(ings, reviewIngress("b", fmt.Sprintf("i%03d", k)))
	}
	st := reviewStores(t, ings)
	cfg := `{{ $snippet := "" }}{{ range $i := .resources.ingresses.List }}{{ if not $snippet }}` +
		`{{ $snippet = index (default dict $i.metadata.annotations) "haproxy.org/global-snippet" | default "" }}{{ end }}{{ end }}` +
		`{{ range $i := .resources.ingresses.Each }}{{ $i.metadata.name }}{{ if $snippet }} +snippet{{ end }}
{{ end }}`
	e := mustEngine(t, cfg)
	_, err := e.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", MaxBytes: maxBytes, Record: true})
	require.NoError(t, err)
	tbl := e.table.Load()
	require.NotNil(t, tbl)
	var keyBytes int
	for k := range tbl.entries {
		keyBytes += len(k)
	}
	t.Logf("%d entries, %d bytes of keys; scratch budget %d", len(tbl.entries), keyBytes, scratchFactor*maxBytes)
	require.LessOrEqual(t, keyBytes, scratchFactor*maxBytes, "the table's keys alone exceed the render's scratch budget")
}

// exampleState builds fresh stores (the example's indexBy) holding the
// given applications' objects (shared maps: the same object in two states
// is the same map).
func exampleState(t *testing.T, apps map[int]map[string]map[string]any, which ...int) store.Set {
	t.Helper()
	spec := exampleSpec(t)
	set := store.Set{}
	for key, w := range spec.WatchedResources {
		s, err := store.New(w.IndexBy)
		require.NoError(t, err)
		for _, i := range which {
			require.NoError(t, s.Add(&unstructured.Unstructured{Object: apps[i][key]}))
		}
		set[key] = s
	}
	return set
}

// A live render storing a new table while admissions replay the old one
// (and loads of the table in the middle of a render see either): every
// render must still be a full render's. Run with -race. (It passes: a
// guard, not a hole.)
func TestMemoReview4ConcurrentRecordAndReplay(t *testing.T) {
	apps := map[int]map[string]map[string]any{}
	for i := range 12 {
		apps[i] = randomApp(i)
	}
	states := []store.Set{
		exampleState(t, apps, 0, 1, 2, 3, 4, 5, 6, 7),
		exampleState(t, apps, 0, 1, 2, 3, 4, 5, 6, 8),
		exampleState(t, apps, 1, 2, 3, 4, 5, 6, 7, 9, 10),
		exampleState(t, apps, 0, 2, 3, 5, 6, 7, 11),
	}
	spec := exampleSpec(t)
	full := mustNew(t, spec)
	want := make([]rendered, len(states))
	for i, st := range states {
		want[i] = render(t, full, st, false)
		require.Empty(t, want[i].err)
	}
	incr := mustNew(t, spec)
	render(t, incr, states[0], true)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 2 {
		wg.Go(func() {
			for n := range 60 {
				i := (n + g) % len(states)
				if got := render(t, incr, states[i], g == 0); got != want[i] {
					errs <- fmt.Sprintf("goroutine %d, render %d of state %d:\nfull:        %+v\nincremental: %+v", g, n, i, want[i], got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	require.Positive(t, incr.MemoStats().Replayed)
}

// BenchmarkReplayManySharedMaps replays an iteration whose gets return
// many distinct shared maps: a template grouping routes by host (a dict
// per host, found with get) and two Ingresses of the same 4,000 hosts (the
// second's gets return the maps the first created). Replay validation
// finds each result's first position among the refs in a map; it once
// scanned them, quadratic in the gets of one iteration (a 500 KB Ingress
// made every render about six times slower than a full one).
// render=incremental should stay near render=full or below.
func BenchmarkReplayManySharedMaps(b *testing.B) {
	const p = 4000
	cfg := `{{ $hosts := dict }}{{ range $i := .resources.ingresses.Each }}{{ range $r := $i.spec.rules }}` +
		`{{ if not (hasKey $hosts $r.host) }}{{ $_ := set $hosts $r.host dict }}{{ end }}` +
		`{{ $h := get $hosts $r.host }}{{ $_ := set $h $i.metadata.name true }}{{ end }}{{ end }}{{ len $hosts }}`
	rules := make([]any, 0, p)
	for k := range p {
		rules = append(rules, map[string]any{"host": fmt.Sprintf("h%d.example.com", k)})
	}
	withRules := func(name string) map[string]any {
		ing := reviewIngress("a", name)
		ing["spec"] = map[string]any{"rules": rules}
		return ing
	}
	st := reviewStores(b, []map[string]any{withRules("a"), withRules("b")})
	incr := mustEngine(b, cfg)
	_, err := incr.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", Record: true})
	require.NoError(b, err)
	for _, e := range []struct {
		name   string
		engine *Engine
	}{{"full", mustEngine(b, cfg)}, {"incremental", incr}} {
		b.Run("render="+e.name, func(b *testing.B) {
			for b.Loop() {
				_, err := e.engine.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy"})
				require.NoError(b, err)
			}
		})
	}
	require.Positive(b, incr.MemoStats().Replayed)
}

// snapshotNodes counts the lists and maps of a snapshot.
func snapshotNodes(v any) int {
	switch x := v.(type) {
	case builtList:
		n := 1
		for _, e := range x {
			n += snapshotNodes(e)
		}
		return n
	case *builtMap:
		n := 1
		for _, e := range x.m {
			n += snapshotNodes(e)
		}
		return n
	}
	return 0
}

// The snapshot of a final (and of a set value) copies lists element by
// element without noticing a list met twice, and rebuild copies it back
// on every replay: a value the render built for a few bytes of scratch
// (list $y $y, d times: d lists of two slots) is 2^d lists in the table
// and in every replaying render, with no deadline check in take or
// rebuild. (An operator's template, but any tenant data it holds is
// copied that many times; a list shared by every iteration's set value
// is copied once per iteration the same way.)
func TestMemoReview4SnapshotCopiesSharedListsExponentially(t *testing.T) {
	x := reviewIngress("a", "x")
	st := reviewStores(t, []map[string]any{x})
	const depth = 16
	cfg := fmt.Sprintf(`{{ $x := "" }}{{ range $i := .resources.ingresses.Each }}{{ $y := list $i.metadata.name }}`+
		`{{ range $k := until %d }}{{ $y = list $y $y }}{{ end }}{{ $x = $y }}{{ end }}{{ len $x }}`, depth)
	e := mustEngine(t, cfg)
	_, err := e.Render(context.Background(), Input{Stores: st, BaseDir: "/etc/haproxy", Record: true})
	require.NoError(t, err)
	nodes := 0
	for _, entry := range e.table.Load().entries {
		for _, f := range entry.finals {
			nodes += snapshotNodes(f.value)
		}
	}
	t.Logf("the render built %d lists; the table holds %d", depth+1, nodes)
	require.LessOrEqual(t, nodes, 4*(depth+1), "the snapshot copies a list once per path to it")
}
