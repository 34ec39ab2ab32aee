package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Pruning (watched.Keep over the ReadSet) keeps what a render can depend
// on even where a field is evaluated but its value never used (a shape
// read): a chain, an index, a dict value, each's argument, a snippet's
// dot, an addFile owner, a string charged to the budget; and renders the
// same where the field function's error names a part of an object, a key
// is empty or holds the scan's path separator.

// renderWholeAndPruned renders cfg over stores holding objs (per store
// key, indexed by namespace and name) whole, and pruned as the
// controller prunes them (watched.Resource.Keep of the engine's ReadSet paths), and returns both.
func renderWholeAndPruned(t *testing.T, cfg string, objs map[string][]map[string]any, opts ...specOpt) (whole, pruned rendered) {
	t.Helper()
	e := mustEngine(t, cfg, opts...)
	ws, ps, keeps := wholeAndPrunedStores(t, e, objs)
	for key, keep := range keeps {
		t.Logf("store %s keeps %s", key, keep)
	}
	return render(t, e, ws, false), render(t, e, ps, false)
}

// wholeAndPrunedStores returns stores holding objs (per store key, indexed
// by namespace and name) whole, and pruned as the controller prunes them
// for e (watched.Resource.Keep of its ReadSet paths), and the Keep of each
// store key.
func wholeAndPrunedStores(t *testing.T, e *Engine, objs map[string][]map[string]any) (whole, pruned store.Set, keeps map[string]*watched.Keep) {
	t.Helper()
	whole, pruned, keeps = store.Set{}, store.Set{}, map[string]*watched.Keep{}
	for key, list := range objs {
		keep := watched.Resource{Key: key, IndexBy: nsName}.Keep(e.Reads().Paths(key))
		w, err := store.New(nsName)
		require.NoError(t, err)
		p, err := store.New(nsName)
		require.NoError(t, err)
		for _, o := range list {
			require.NoError(t, w.Add(&unstructured.Unstructured{Object: o}))
			require.NoError(t, p.Add(&unstructured.Unstructured{Object: keep.Prune(o)}))
		}
		whole[key], pruned[key], keeps[key] = w, p, keep
	}
	return whole, pruned, keeps
}

func requireSameRender(t *testing.T, cfg string, objs map[string][]map[string]any, opts ...specOpt) {
	t.Helper()
	w, p := renderWholeAndPruned(t, cfg, objs, opts...)
	t.Logf("whole:  out=%q err=%q", w.out, w.err)
	t.Logf("pruned: out=%q err=%q", p.out, p.err)
	require.Equal(t, w, p, "pruned stores render differently")
}

func obj(name string, fields map[string]any) map[string]any {
	o := map[string]any{
		"apiVersion": "v1", "kind": "Thing",
		"metadata": map[string]any{"namespace": "ns", "name": name},
	}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

// A field chain evaluated but never used. With missingkey=zero a
// missing intermediate map is an error; the scan reads a path only when its
// value is used, so pruning removes spec and the chain now fails.
func TestPruneUnusedChain(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ $unused := $i.spec.backend.name }}ok {{ $i.metadata.name }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"backend": map[string]any{"name": "svc"}}})}})
}

// The other direction: the whole object errors (a scalar where the
// chain looks for a field), the pruned one renders.
func TestPruneUnusedChainScalar(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ $_ := $i.spec.backend.name }}ok{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"backend": "svc"}})}})
}

// The index of a list element whose value is unused.
func TestPruneUnusedIndex(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ $first := index $i.spec.rules 0 }}ok{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"rules": []any{map[string]any{"host": "h"}}}})}})
}

// A dict value in a dict never read.
func TestPruneUnusedDictValue(t *testing.T) {
	requireSameRender(t,
		`{{ $d := dict }}{{ range $i := .resources.things.Each }}{{ $_ := set $d $i.metadata.name (dict "svc" $i.spec.backend.name) }}{{ end }}{{ len $d }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"backend": map[string]any{"name": "svc"}}})}})
}

// The function each dispatches on its argument's kind; the scan passes the value
// through without reading it.
func TestPruneEachUnused(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ $_ := each $i.spec.x }}ok{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"x": "a string"}})}})
}

// The function field OBJ PATH names OBJ in its error by OBJ's kind and
// metadata.name; when OBJ is a part of a store object, those are not read.
func TestPruneFieldErrorNamesSubObject(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ field $i.spec.template "spec.containers" }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"template": map[string]any{
			"kind": "PodTemplate", "metadata": map[string]any{"name": "tmpl"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}},
		}}})}})
}

// The call index OBJ "" is taken for the object itself.
func TestPruneEmptyKeyAtRoot(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ (index $i "").name }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"": map[string]any{"name": "x"}})}})
}

func TestPruneEmptyKeyAtRootTested(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ if index $i "" }}set{{ else }}unset{{ end }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"": "x"})}})
}

// A key holding the scan's path separator.
func TestPruneNULKey(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ index $i.spec "a\x00b" }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"a\x00b": "v"}})}})
}

// Realistic form: a dict passed to a snippet that reads only some of
// its keys. The snippet reads .name, so spec.backend.service keeps only its
// name; evaluating the port chain, whose value nothing reads, then fails
// over the pruned object.
func TestPruneDictToSnippet(t *testing.T) {
	svc := map[string]any{"name": "web", "port": map[string]any{"number": int64(80)}}
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ template "backend" (dict "name" $i.spec.backend.service.name "port" $i.spec.backend.service.port.number) }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"backend": map[string]any{"service": svc}}})}},
		withSnippet("backend", `server {{ .name }}`))
}

// A snippet that ignores its dot.
func TestPruneTemplateIgnoresDot(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ template "static" $i.spec.tls.secretName }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"tls": map[string]any{"secretName": "s"}}})}},
		withSnippet("static", `static`))
}

// An addFile owner is no longer read, yet it is evaluated.
func TestPruneAddFileOwnerChain(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.Each }}{{ addFile "map" (printf "%s.map" $i.metadata.name) "x" $i.spec.owner }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"owner": map[string]any{"name": "o"}}})}})
}

// Budget form: list charges the length of a string it holds to the
// scratch budget, read or not.
func TestPruneUnreadStringCharged(t *testing.T) {
	e := mustEngine(t, `{{ range $i := .resources.things.Each }}{{ $i.spec.name }}{{ $_ := list $i.spec.big }}{{ end }}`)
	o := obj("a", map[string]any{"spec": map[string]any{"name": "n", "big": string(make([]byte, 5000))}})
	keep := watched.Resource{Key: "things", IndexBy: nsName}.Keep(e.Reads().Paths("things"))
	ws, ps := store.Set{}, store.Set{}
	w, _ := store.New(nsName)
	p, _ := store.New(nsName)
	require.NoError(t, w.Add(&unstructured.Unstructured{Object: o}))
	require.NoError(t, p.Add(&unstructured.Unstructured{Object: keep.Prune(o)}))
	ws["things"], ps["things"] = w, p
	run := func(s store.Set) string {
		b, err := e.Render(context.Background(), Input{Stores: s, BaseDir: "/etc/haproxy", MaxBytes: 1000})
		if err != nil {
			return "error: " + err.Error()
		}
		return bundleText(b)
	}
	require.Equal(t, run(ws), run(ps))
}

// Same: two versions that differ only where nothing is "used" render
// differently.
func TestPruneSame(t *testing.T) {
	cfg := `{{ range $i := .resources.things.Each }}{{ $unused := $i.spec.backend.name }}ok{{ end }}`
	e := mustEngine(t, cfg)
	old := obj("a", map[string]any{"spec": map[string]any{"backend": map[string]any{"name": "svc"}}})
	updated := obj("a", nil)
	r := func(o map[string]any) rendered {
		return render(t, e, store.Set{"things": newFakeReader(t, nsName, o)}, false)
	}
	require.NotEqual(t, r(old), r(updated), "the two versions render differently")
	require.False(t, e.Reads().Same("things", old, updated), "so they must not read alike: the chain is a shape read")
}

// Things checked that held.
func TestPruneHeld(t *testing.T) {
	rules := []any{map[string]any{"host": "h", "http": map[string]any{"x": 1}}, map[string]any{"http": map[string]any{"y": 2}}, "scalar"}
	objs := map[string][]map[string]any{
		"things": {
			obj("a", map[string]any{"spec": map[string]any{"rules": rules, "m": map[string]any{"k": "v", "z": nil}, "e": map[string]any{}, "l": []any{}},
				"status": map[string]any{"s": "x"}}),
			obj("b", map[string]any{"spec": map[string]any{"m": map[string]any{}}}),
		},
		"svcs": {obj("a", map[string]any{"spec": map[string]any{"p": int64(1)}})},
	}
	each := func(body string) string {
		return `{{ range $i := .resources.things.Each }}` + body + `;{{ end }}`
	}
	for _, cfg := range []string{
		each(`{{ if $i }}T{{ end }}{{ with $i }}{{ .metadata.name }}{{ $.resources.svcs.Len }}{{ end }}`),
		each(`{{ $x := and $i $i.spec.m }}{{ $x }}{{ or $i.spec.nope $i | toJson }}`),
		each(`{{ $d := default (dict "metadata" (dict "name" "dflt")) ($.resources.svcs.Get "ns" $i.metadata.name) }}{{ if $d }}{{ $d.metadata.name }}{{ end }}`),
		each(`{{ eq (or $i.spec.nope "d") "d" }}{{ not $i }}{{ not $i.spec.e }}{{ empty $i.spec.l }}{{ kindIs "map" $i.spec.m }}{{ typeOf $i.spec.rules }}`),
		each(`{{ deepEqual $i.spec.m (dict "k" "v") }}{{ len $i.spec.m }}{{ keys $i.spec.m }}{{ toJson $i.status }}`),
		each(`{{ with $i.spec.rules }}{{ with index . 1 }}{{ hasKey . "host" }}{{ end }}{{ (index . 0).host }}{{ end }}`),
		each(`{{ if $i.spec.rules }}{{ hasKey (index $i.spec.rules 1) "host" }}|{{ (index $i.spec.rules 0).http.x }}{{ end }}`),
		each(`{{ field $i "spec.rules[0].host" }}{{ field $i "spec.rules[5].host" }}{{ field $i "spec.m['k']" }}`),
		each(`{{ pick $i.spec.m "k" | toJson }}{{ omit $i.spec.m "k" | toJson }}{{ dig "spec" "m" "k" "dflt" $i }}{{ values $i.spec.m }}{{ pluck "k" $i.spec.m }}`),
		each(`{{ $c := deepCopy $i.spec.m }}{{ $_ := set $c "n" 1 }}{{ toJson $c }}{{ merge (dict) $i.spec.m | toJson }}{{ mergeOverwrite (dict "k" 0) $i.spec.m | toJson }}`),
		each(`{{ $l := list $i (index (default (list (dict)) $i.spec.rules) 0) }}{{ range $e := $l }}{{ if $e }}E{{ end }}{{ end }}{{ (index $l 1).host }}`),
		each(`{{ range $k, $v := each $i.spec.m }}{{ $k }}={{ $v }}{{ end }}{{ index $i.spec.m "z" }}{{ hasKey $i.spec.m "z" }}`),
		each(`{{ $d := dict "o" $i }}{{ if get $d "o" }}{{ (get $d "o").metadata.name }}{{ end }}{{ if index $d "o" }}Y{{ end }}`),
		each(`{{ set $i.spec "x" 1 }}`),
		each(`{{ addFile "map" (printf "%s.map" $i.metadata.name) "x" $i }}`),
		`{{ $first := index .resources.things.List 0 }}{{ if $first }}{{ $first.metadata.name }}{{ end }}{{ with .resources.svcs.Get "ns" "nope" }}{{ else }}none{{ end }}`,
	} {
		t.Run(cfg, func(t *testing.T) { requireSameRender(t, cfg, objs) })
	}
}
