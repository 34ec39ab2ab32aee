package render

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/render/reads"
	"github.com/haproxy-template/htc/pkg/store"
)

// labelled is an Ingress with the label app=<value>.
func labelled(value string) map[string]any {
	o := ingress("default", "a", "a.example.com", "svc")
	meta := o["metadata"].(map[string]any)
	meta["labels"] = map[string]any{"app": value}
	return o
}

// unlabelled is the Ingress of labelled without its labels.
func unlabelled() map[string]any {
	o := labelled("")
	delete(o["metadata"].(map[string]any), "labels")
	return o
}

// renderOne renders e over an ingresses store holding obj alone; it
// returns every output and the error text, so that two renders compare.
func renderOne(t *testing.T, e *Engine, obj map[string]any) string {
	t.Helper()
	ings, err := store.New(nsName)
	require.NoError(t, err)
	require.NoError(t, ings.Add(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}))
	b, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": ings}, BaseDir: "/etc/haproxy"})
	if err != nil {
		return "error: " + err.Error()
	}
	out := b.Config
	for _, files := range []map[string]string{b.Maps, b.Files, b.Certs} {
		for name, text := range files {
			out += "\n--- " + name + "\n" + text
		}
	}
	return out
}

// labelReader is a configuration that reads an Ingress's labels in some
// way.
type labelReader struct {
	name   string
	cfg    string
	opts   []specOpt
	coarse bool // reads more than the labels' values; the render may not differ
}

// labelReaders are the ways a template can reach an Ingress's labels.
func labelReaders() []labelReader {
	each := func(body string) string {
		return `{{ range $i := .resources.ingresses.Each }}` + body + `{{ end }}`
	}
	return []labelReader{
		{name: "field chain", cfg: each(`{{ $i.metadata.labels.app }}`)},
		{name: "dot", cfg: `{{ range .resources.ingresses.List }}{{ .metadata.labels.app }}{{ end }}`},
		{name: "object printed whole", cfg: each(`{{ toJson $i }}`)},
		{name: "pipeline into a function", cfg: each(`{{ $i | toJson }}`)},
		{name: "printf %v", cfg: each(`{{ printf "%v" $i }}`)},
		{name: "a built map printed whole", cfg: each(`{{ toJson (dict "x" (dict "y" $i)) }}`)},
		{name: "a built list tested", cfg: each(`{{ if eq (len (list $i.metadata.labels.app)) 1 }}{{ toJson (list $i.metadata) }}{{ end }}`)},
		{name: "list printed", cfg: `{{ toJson .resources.ingresses.List }}`},
		{name: "dict into include", cfg: each(`{{ include "l" (dict "x" $i) }}`), opts: []specOpt{withSnippet("l", `{{ .x.metadata.labels.app }}`)}},
		{name: "a snippet's value", cfg: each(`{{ (includeValue "v" (dict "x" $i)).metadata.labels.app }}`), opts: []specOpt{withSnippet("v", `{{ result .x }}`)}},
		{name: "a value a template the snippet runs gives", cfg: each(`{{ (includeValue "v" $i).metadata.labels.app }}`), opts: []specOpt{withSnippet("v", `{{ template "w" . }}`), withSnippet("w", `{{ result . }}`)}},
		{name: "a dict a snippet gives", cfg: each(`{{ (includeValue "v" $i).l.app }}`), opts: []specOpt{withSnippet("v", `{{ result (dict "l" .metadata.labels) }}`)}},
		{name: "template action", cfg: each(`{{ template "l" (dict "x" $i) }}`), opts: []specOpt{withSnippet("l", `{{ .x.metadata.labels.app }}`)}},
		{name: "$ of an included template", cfg: each(`{{ include "l" $i }}`), opts: []specOpt{withSnippet("l", `{{ with .spec }}{{ $.metadata.labels.app }}{{ end }}`)}},
		{name: "set under a computed key, ranged", cfg: `{{ $d := dict }}` + each(`{{ $_ := set $d $i.metadata.name $i }}`) + `{{ range $k, $v := $d }}{{ $v.metadata.labels.app }}{{ end }}`},
		{name: "set through an alias", cfg: `{{ $a := dict }}{{ $b := $a }}` + each(`{{ $_ := set $b "k" $i }}`) + `{{ (get $a "k").metadata.labels.app }}`},
		{name: "nested dicts", cfg: `{{ $a := dict "in" dict }}` + each(`{{ $_ := set (get $a "in") "k" $i.metadata }}`) + `{{ $a.in.k.labels.app }}`},
		{name: "outer variable assigned", cfg: `{{ $last := dict }}` + each(`{{ $last = $i }}`) + `{{ $last.metadata.labels.app }}`},
		{name: "field, constant path", cfg: each(`{{ field $i "metadata.labels['app']" }}`)},
		{name: "field, computed path", cfg: each(`{{ field $i (printf "metadata.labels.%s" "app") }}`)},
		{name: "index, constant keys", cfg: each(`{{ index $i "metadata" "labels" "app" }}`)},
		{name: "index, computed key", cfg: each(`{{ index $i.metadata (printf "%s" "labels") }}`)},
		{name: "get", cfg: each(`{{ get $i.metadata.labels "app" }}`)},
		{name: "hasKey", cfg: each(`{{ if hasKey $i.metadata.labels "app" }}yes{{ end }}`)},
		{name: "range over metadata", cfg: each(`{{ range $k, $v := $i.metadata }}{{ $k }}{{ end }}`), coarse: true},
		{name: "recursive walk", cfg: each(`{{ template "walk" $i }}`), opts: []specOpt{withSnippet("walk", `{{ range $k, $v := . }}{{ $k }}={{ if kindIs "map" $v }}{{ template "walk" $v }}{{ else }}{{ $v }}{{ end }};{{ end }}`)}},
		{name: "deepCopy", cfg: each(`{{ $c := deepCopy $i }}{{ $c.metadata.labels.app }}`)},
		{name: "merge into a map of the render", cfg: `{{ $m := dict }}` + each(`{{ $_ := merge $m $i }}`) + `{{ $m.metadata.labels.app }}`},
		{name: "with", cfg: each(`{{ with $i.metadata.labels }}{{ .app }}{{ end }}`)},
		{name: "default", cfg: each(`{{ $x := default dict $i.metadata.labels }}{{ $x.app }}`)},
		{name: "or", cfg: each(`{{ (or $i.metadata.labels dict).app }}`)},
		{name: "list and index", cfg: each(`{{ $l := list $i }}{{ (index $l 0).metadata.labels.app }}`)},
		{name: "each over a dict", cfg: each(`{{ range $k, $v := each (dict "a" $i) }}{{ $v.metadata.labels.app }}{{ end }}`)},
		{name: "Get", cfg: `{{ with .resources.ingresses.Get "default" "a" }}{{ .metadata.labels.app }}{{ end }}`},
		{name: "a store picked with index", cfg: `{{ range (index .resources "ingresses").List }}{{ .metadata.labels.app }}{{ end }}`},
		{name: ".resources ranged", cfg: `{{ range $k, $s := .resources }}{{ range $s.List }}{{ .metadata.labels.app }}{{ end }}{{ end }}`},
		{name: "template chosen at render time", cfg: each(`{{ include (printf "l%s" "") $i }}`), opts: []specOpt{withSnippet("l", `{{ .metadata.labels.app }}`)}},
		{name: "a map file", cfg: `x`, opts: []specOpt{withMap("m", each(`{{ $i.metadata.labels.app }}`))}},
		{name: "addFile content", cfg: each(`{{ $_ := addFile "file" "f" (toJson $i.metadata) }}`), coarse: true},
		{name: "ternary", cfg: each(`{{ (ternary $i dict true).metadata.labels.app }}`)},
		{name: "variable shadowed inside, outer read", cfg: `{{ $v := dict }}` + each(`{{ $v = $i.metadata }}`) + `{{ $v.labels.app }}`},
		{name: "pipeline value as last argument", cfg: each(`{{ $i.metadata.labels | values | join "," }}`)},
		{name: "a label map tested", cfg: each(`{{ if not $i.metadata.labels }}none{{ end }}`)},
		{name: "and over the object", cfg: each(`{{ (and $i $i.metadata.labels).app }}`)},
		{name: "default over the object", cfg: each(`{{ (default dict $i).metadata.labels.app }}`)},
		{name: "object tested, then read", cfg: `{{ with .resources.ingresses.Get "default" "a" }}{{ if . }}{{ .metadata.labels.app }}{{ end }}{{ end }}`},
		{name: "addFile content with an owner", cfg: each(`{{ $_ := addFile "file" (printf "f%s" $i.metadata.name) (printf "%v" $i.metadata.labels.app) $i }}`), coarse: true},
		{name: "a fail message", cfg: each(`{{ fail $i (printf "label %v" $i.metadata.labels.app) }}`)},
		{name: "a warn object built of a label", cfg: each(`{{ warn (dict "kind" "Ingress" "metadata" (dict "name" $i.metadata.labels.app)) "w" }}`), coarse: true},
	}
}

// TestReadsFollowEveryWayToAField: whatever way a template reaches an
// Ingress's labels, the scan finds that they are read, so a change of a
// label is never taken for one that renders alike. Each case also renders
// differently when the label changes or goes (it really reads them),
// except where noted: those are the places the scan is knowingly coarse.
func TestReadsFollowEveryWayToAField(t *testing.T) {
	for _, tc := range labelReaders() {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.cfg, tc.opts...)
			r := e.Reads()
			assert.False(t, r.Same("ingresses", labelled("one"), labelled("two")), "a changed label renders alike? reads: %v", r.Fields("ingresses"))
			assert.False(t, r.Same("ingresses", labelled("one"), unlabelled()), "a removed label renders alike? reads: %v", r.Fields("ingresses"))
			if !tc.coarse {
				one := renderOne(t, e, labelled("one"))
				assert.True(t, one != renderOne(t, e, labelled("two")) || one != renderOne(t, e, unlabelled()),
					"the case does not read the label: it tests nothing")
			}
		})
	}
}

// TestReadsLeaveOutWhatNoTemplateReads: fields no template reads render
// alike when they change.
func TestReadsLeaveOutWhatNoTemplateReads(t *testing.T) {
	cases := []struct {
		name string
		cfg  string
		opts []specOpt
		want []string
	}{
		{name: "names only", cfg: `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ end }}`, want: []string{"metadata.name"}},
		{name: "field", cfg: `{{ range .resources.ingresses.List }}{{ field . "spec.rules[0].host" }}{{ end }}`, want: []string{"spec.rules.host"}},
		{name: "inner variable shadows", cfg: `{{ $v := dict }}{{ range $i := .resources.ingresses.List }}{{ $v := $i }}{{ $v.spec }}{{ end }}{{ $v.x }}`, want: []string{"spec"}},
		{name: "through dicts and snippets", cfg: `{{ range $i := .resources.ingresses.Each }}{{ include "n" (dict "ing" $i "ctx" $) }}{{ end }}`,
			opts: []specOpt{withSnippet("n", `{{ .ing.metadata.namespace }}/{{ .ing.metadata.name }}{{ .ctx.extraContext.x }}`)}, want: []string{"metadata.name", "metadata.namespace"}},
		{name: "through a snippet's value", cfg: `{{ range $i := .resources.ingresses.Each }}{{ (includeValue "n" (dict "ing" $i)).name }}{{ end }}`,
			opts: []specOpt{withSnippet("n", `{{ result (dict "name" .ing.metadata.name "ing" .ing) }}`)}, want: []string{"metadata.name"}},
		{name: "each snippet's own value", cfg: `{{ range $i := .resources.ingresses.Each }}{{ (includeValue "o" $i).metadata.name }}{{ toJson (includeValue "n" $i) }}{{ end }}`,
			opts: []specOpt{withSnippet("o", `{{ result . }}`), withSnippet("n", `{{ result .metadata.namespace }}`)}, want: []string{"metadata.name", "metadata.namespace"}},
		{name: "membership only", cfg: `{{ len .resources.ingresses.List }}{{ .resources.ingresses.Len }}{{ range .resources.ingresses.List }}x{{ end }}`, want: []string{""}},
		{name: "Len", cfg: `{{ .resources.ingresses.Len }}{{ range .resources.ingresses.List }}x{{ end }}`},
		{name: "an object tested: it exists", cfg: `{{ range .resources.ingresses.List }}{{ if and . (not (not .)) }}{{ .metadata.name }}{{ end }}{{ with . }}{{ end }}{{ end }}{{ if .resources.ingresses.Get "default" "a" }}a{{ end }}`, want: []string{"metadata.name"}},
		{name: "a warn or fail object: its identity", cfg: `{{ range $i := .resources.ingresses.Each }}{{ warn $i $i.metadata.name }}{{ if eq $i.metadata.name "zz" }}{{ fail $i "zz" }}{{ end }}{{ end }}`, want: []string{"metadata.name"}},
		{name: "an addFile owner: its name", cfg: `{{ range $i := .resources.ingresses.Each }}{{ $_ := addFile "file" $i.metadata.name "x" $i }}{{ end }}`, want: []string{"metadata.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.cfg, tc.opts...)
			r := e.Reads()
			assert.Equal(t, tc.want, r.Fields("ingresses"))
			if len(tc.want) == 1 && tc.want[0] == "" {
				return // len of the list reads it whole: coarse, but safe
			}
			assert.True(t, r.Same("ingresses", labelled("one"), labelled("two")))
			assert.True(t, r.Same("ingresses", labelled("one"), unlabelled()))
			assert.Equal(t, renderOne(t, e, labelled("one")), renderOne(t, e, labelled("two")))
		})
	}
}

// TestEveryFunctionHasAReadRule fails on a function a template can call
// (templateFuncs: text/template's builtins and every function New gives
// templates) for which the read scan has no rule (package reads, rules.go),
// as a new sprig version, Go release or htc function would add one: a
// call of it would make the scan read everything, and the controller keep
// every field. Say in the table how the scan follows it. It fails too on a
// rule for a function no template can call.
func TestEveryFunctionHasAReadRule(t *testing.T) {
	callable := templateFuncs(t)
	for _, name := range slices.Sorted(maps.Keys(callable)) {
		assert.True(t, reads.HasRule(name), "%s: a template can call it, but the read scan has no rule for it (pkg/render/reads/rules.go)", name)
	}
	for _, name := range reads.Functions() {
		assert.True(t, callable[name], "the read scan has a rule for %s, which no template can call", name)
	}
}
