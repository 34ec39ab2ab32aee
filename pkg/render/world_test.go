package render

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

// loopSubjects are configurations whose loops exercise what the read scan and
// pruning must follow: outer variables read and assigned, shared maps read and
// written (the first to claim a key wins), nested loops, loops over built
// dicts, loops inside snippets, added files, failures, lists and maps
// stored for later iterations, merge, and a snippet's $ that is a built
// map.
func loopSubjects() []labelReader {
	ing := func(body string) string {
		return `{{ range $i := .resources.ingresses.Each }}` + body + `{{ end }}`
	}
	return []labelReader{
		{name: "first claim wins", cfg: `{{ $claims := dict }}{{ $n := 0 }}` + ing(`{{ range $r := default list $i.spec.rules }}`+
			`{{ if not (hasKey $claims (default "" $r.host)) }}{{ $_ := set $claims (default "" $r.host) $i.metadata.name }}{{ $n = add1 $n }}{{ end }}{{ end }}`) +
			`{{ range $h, $o := $claims }}{{ $h }}={{ $o }}
{{ end }}claimed {{ $n }}`},
		{name: "last and counter", cfg: `{{ $last := "" }}{{ $count := 0 }}` + ing(`{{ if $i.metadata.labels }}{{ $last = $i.metadata.name }}{{ end }}{{ $count = add $count 1 }}`) + `{{ $last }} {{ $count }}`},
		{name: "nested each and services", cfg: ing(`{{ $i.metadata.name }}:{{ range $svc := $.resources.services.Each $i.metadata.namespace }}{{ $svc.metadata.name }},{{ end }}
`)},
		{name: "each over built dicts", cfg: `{{ $b := dict }}` + ing(`{{ $_ := set $b $i.metadata.name (dict "ns" $i.metadata.namespace "ing" $i "tags" (list "a" $i.metadata.name)) }}`) +
			`{{ range $name, $e := each $b }}backend {{ $name }} {{ $e.ns }} {{ join "," $e.tags }}{{ range $s := $.resources.services.Each $e.ns }} {{ $s.metadata.name }}{{ end }}
{{ end }}`},
		{name: "loop in a snippet", cfg: `{{ include "loop" . }}`, opts: []specOpt{withSnippet("loop", ing(`{{ $i.metadata.name }}
`))}},
		{name: "built map as the snippet's dot", cfg: `{{ $acc := dict "seen" dict }}{{ include "loop" (dict "acc" $acc "res" .resources) }}{{ len $acc.seen }}`,
			opts: []specOpt{withSnippet("loop", `{{ range $i := .res.ingresses.Each }}{{ $_ := set $.acc.seen $i.metadata.name true }}{{ end }}`)}},
		{name: "files and failures", cfg: ing(`{{ range $t := default list $i.spec.tls }}{{ $s := $.resources.secrets.Get $i.metadata.namespace $t.secretName }}` +
			`{{ if not $s }}{{ fail (printf "no secret %s" $t.secretName) }}{{ end }}{{ addFile "cert" (printf "%s.pem" $t.secretName) (b64dec (index $s.data "tls.crt")) $s }} {{ end }}`)},
		{name: "merge into an outer map", cfg: `{{ $m := dict }}` + ing(`{{ $_ := merge $m (dict $i.metadata.name 1) }}`) + `{{ keys $m | join "," }}`},
		{name: "get of a shared nested map", cfg: `{{ $r := dict "a" dict "b" dict }}` + ing(`{{ $x := get $r (ternary "a" "b" (eq $i.metadata.namespace "ns0")) }}{{ if not (hasKey $x $i.metadata.name) }}{{ $_ := set $x $i.metadata.name (len $x) }}{{ end }}`) +
			`{{ toJson $r }}`},
		{name: "unset and lists", cfg: `{{ $d := dict "keep" (list 1 2) }}` + ing(`{{ $_ := unset $d "keep" }}{{ $_ := set $d $i.metadata.name (list $i.metadata.namespace (dict "k" 1)) }}`) + `{{ toJson $d }}`},
		{name: "shared map used as a value", cfg: `{{ $d := dict }}` + ing(`{{ $_ := set $d $i.metadata.name 1 }}{{ len $d }} `)},
		{name: "pathFor of an added file", cfg: ing(`{{ if eq $i.metadata.namespace "ns1" }}{{ addFile "map" "ns1.map" "x\n" }}{{ end }}`) +
			ing(`{{ pathFor "map" "ns1.map" }} {{ $i.metadata.name }}
`)},
		{name: "each nested in a body", cfg: ing(`{{ $i.metadata.name }}:
{{ range $k, $v := each (dict "svc" ($.resources.services.Get $i.metadata.namespace $i.metadata.name) "n" 1) }}{{ $k }}
{{ end }}`)},
		{name: "outer list appended", cfg: `{{ $l := list }}` + ing(`{{ $l = append $l $i.metadata.name }}`) + `{{ join "," $l }}`},
		// Review: an assigned-only outer map is not keyed, and an
		// "unchanged" final keeps the replaying render's value.
		{name: "review: service of the namespace kept", cfg: `{{ $svc := dict }}` + ing(`{{ $s := $.resources.services.Get $i.metadata.namespace "app0" }}{{ if $s }}{{ $svc = $s }}{{ end }}`) +
			`svc {{ field $svc "metadata.name" }}`},
		// Review: a declared with pipeline reads the shared map as its dot.
		{name: "review: with over a shared map", cfg: `{{ $r := dict "hosts" dict }}` + ing(`{{ with $h := get $r "hosts" }}{{ len . }}{{ end }} {{ $w := get $r "hosts" }}{{ $_ := set $w $i.metadata.name 1 }}`)},
		// Review 2 of pruning: a range that assigns an outer variable, and
		// a variable declared in parentheses, used after the loop or call.
		{name: "range assigning an outer variable", cfg: `{{ $x := 0 }}{{ range $x = .resources.ingresses.Each }}{{ $x.metadata.name }},{{ end }} last {{ $x.metadata.name }}`},
		{name: "a variable declared in parentheses", cfg: ing(`{{ $_ := dict "a" ($n := $i.metadata.name) }}{{ $n }} `)},
		// Wrapped loops (memoloop.go): a loop with an else branch is not
		// wrapped; a loop that includes itself runs a second instance of
		// its range inside its second iteration.
		{name: "a loop with an else branch", cfg: `{{ $n := 0 }}` + `{{ range $i := .resources.ingresses.Each }}{{ $n = add1 $n }}{{ $i.metadata.name }}{{ else }}none{{ end }} {{ $n }}`},
		{name: "a loop that includes itself", cfg: `{{ include "rec" (dict "top" . "depth" 0) }}`,
			opts: []specOpt{withSnippet("rec", `{{ $n := 0 }}{{ range $i := .top.resources.ingresses.Each }}{{ $n = add1 $n }}`+
				`{{ if and (lt $.depth 1) (eq $n 2) }}({{ include "rec" (dict "top" $.top "depth" (add1 $.depth)) }}){{ end }}{{ $i.metadata.name }}{{ $n }},{{ end }}[{{ $n }}]`)}},
		// Flat built dicts (every value a scalar or a resource object) keep
		// their snapshot's fingerprint when rebuilt, until modified: here by
		// set, merge and unset through a get in later loops, as the labels
		// of the application's Service and Secret say (the Ingress, and the
		// first loop's iteration, unchanged), before a last loop keys its
		// iterations by them. The third loop can undo the second's set.
		{name: "flat built dicts modified before a loop over them", cfg: `{{ $b := dict }}` +
			ing(`{{ $_ := set $b $i.metadata.name (dict "ns" $i.metadata.namespace "ing" $i "n" 1) }}`) +
			ing(`{{ $e := get $b $i.metadata.name }}{{ $s := $.resources.services.Get $i.metadata.namespace $i.metadata.name }}`+
				`{{ $app := "" }}{{ if $s }}{{ $app = (default dict $s.metadata.labels).app }}{{ end }}`+
				`{{ if eq $app "b" }}{{ $_ := set $e "n" 2 }}{{ end }}{{ if eq $app "c" }}{{ $_ := merge $e (dict "m" 1) }}{{ end }}`) +
			ing(`{{ $e := get $b $i.metadata.name }}{{ $s := $.resources.secrets.Get $i.metadata.namespace (printf "%s-tls" $i.metadata.name) }}`+
				`{{ $app := "" }}{{ if $s }}{{ $app = (default dict $s.metadata.labels).app }}{{ end }}`+
				`{{ if eq $app "b" }}{{ $_ := set $e "n" 1 }}{{ end }}{{ if eq $app "c" }}{{ $_ := unset $e "m" }}{{ end }}`) +
			`{{ range $name, $e := each $b }}{{ $name }}={{ default "-" $e.n }}/{{ default "-" $e.m }}/{{ $e.ing.metadata.name }}
{{ end }}`},
		// Review: a journaled map reached natively through a context dict.
		{name: "review: journaled map in a context dict", cfg: `{{ $seen := dict }}{{ $ctx := dict "seen" $seen }}` + ing(`{{ $_ := set $seen $i.metadata.name 1 }}{{ len $ctx.seen }} `)},
	}
}

// TestIncrementalRenderIsAFullRender is the randomized equivalence test of
// incremental rendering: over random creates, updates and deletes of
// random objects, a render that replays the iterations the previous
// render of the live state recorded (both a render of a proposal, which
// does not record, and the next recording render) returns exactly what a
// render from scratch returns: every output, every added file, the source
// map and the error with the objects it is attributed to. It runs the
// example Ingress library, memoSubjects and labelReaders, and checks that
// iterations were replayed and run, so that it tests something.
//

// exampleStores returns the example's stores holding 12 random
// applications, their readers, their keys in order, and a function that
// adds the next application.
func exampleStores(t *testing.T, example *config.HAProxyTemplateConfigSpec) (map[string]*store.Store, store.Set, []string, func()) {
	stores := map[string]*store.Store{}
	for key, w := range example.WatchedResources {
		s, err := store.New(w.IndexBy)
		require.NoError(t, err)
		stores[key] = s
	}
	next := 0
	addApp := func() {
		for key, obj := range randomApp(next) {
			require.NoError(t, stores[key].Add(&unstructured.Unstructured{Object: obj}))
		}
		next++
	}
	for range 12 {
		addApp()
	}
	readers := store.Set{}
	for k, s := range stores {
		readers[k] = s
	}
	return stores, readers, slices.Sorted(maps.Keys(stores)), addApp
}

// rendered is what a render returned, in comparable form.
type rendered struct {
	out      string
	sources  string
	warnings string
	err      string
	objects  string
}

func render(t *testing.T, e *Engine, stores store.Set, record bool) rendered {
	t.Helper()
	b, err := e.Render(context.Background(), Input{Stores: stores, BaseDir: "/etc/haproxy", Record: record})
	if err != nil {
		r := rendered{err: err.Error()}
		var ae *AttributedError
		if errors.As(err, &ae) {
			r.objects = fmt.Sprint(ae.Objects())
		}
		return r
	}
	return rendered{out: bundleText(b), sources: fmt.Sprintf("%+v", b.Sources()), warnings: fmt.Sprintf("%+v", b.Warnings)}
}

// randomOp creates, updates or deletes a random object and says which.
func randomOp(t *testing.T, rnd *rand.Rand, stores map[string]*store.Store, keys []string, addApp func()) string {
	t.Helper()
	key := keys[rnd.IntN(len(keys))]
	objs := stores[key].List()
	switch op := rnd.IntN(10); {
	case op == 0 || len(objs) < 4:
		addApp()
		return "create an application"
	case op == 1:
		old := objs[rnd.IntN(len(objs))]
		require.NoError(t, stores[key].Delete(old))
		return "delete " + key
	case op == 2 && key == "ingresses":
		c := objs[rnd.IntN(len(objs))].DeepCopy()
		c.SetName(fmt.Sprintf("copy%d", rnd.IntN(1000)))
		require.NoError(t, stores[key].Add(c))
		return "create a copy of an Ingress"
	}
	updated := objs[rnd.IntN(len(objs))].DeepCopy()
	what := mutate(rnd, key, updated.Object)
	require.NoError(t, stores[key].Update(updated))
	return "update: " + what
}
