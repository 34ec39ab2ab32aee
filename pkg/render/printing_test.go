package render

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// printVerbs are the printf verbs a template can apply to anything.
var printVerbs = []string{"%v", "%+v", "%#v", "%T", "%s", "%q", "%d", "%x", "%X", "%o", "%b", "%e", "%f", "%g", "%t", "%c", "%U", "%p", "%8.3v", "%[1]p"}

// printFuncs are the ways a template turns a value X into text or tells
// one value from another, besides printf (@ stands for the value).
var printFuncs = []string{
	"{{ @ }}", "{{ print @ }}", "{{ println @ }}", "{{ cat @ }}", "{{ toString @ }}", "{{ quote @ }}", "{{ squote @ }}",
	"{{ join \",\" (list @) }}", "{{ toStrings (list @) }}", "{{ html @ }}", "{{ js @ }}", "{{ urlquery @ }}",
	"{{ toJson @ }}", "{{ toPrettyJson @ }}", "{{ toRawJson @ }}", "{{ toJson (list @) }}",
	"{{ typeOf @ }}", "{{ kindOf @ }}", "{{ typeIs \"*render.ResourceStore\" @ }}", "{{ typeIsLike \"store.Overlay\" @ }}",
	"{{ kindIs \"ptr\" @ }}", "{{ deepEqual @ @ }}", "{{ empty @ }}", "{{ len @ }}", "{{ default \"d\" @ }}",
	"{{ printf \"%#v\" (deepCopy @) }}", "{{ toJson (deepCopy @) }}", "{{ printf \"%#v\" (list @ @) }}",
}

// printedValues are the values a template reaches, outside a fragment
// and inside one (where .item is a store object or a frozen dict).
var printedValues = map[string][]string{
	"outer": {"$", "$.resources", "$.resources.cms", "$.resources.cms.Each", "($.resources.cms.List)",
		`($.resources.cms.Get "ns" "a")`, "$.extraContext", "(each (list 1))", `(each (dict "a" 1))`,
		`(semver "1.2.3")`, `(list (semver "1.2.3"))`, `(urlParse "https://u@h:1/p?q#f")`, `(emitted "ch")`,
		`(dict "nil" (rest (list)) "empty" (list))`},
	"fragment": {".item", "$", "$.resources.cms", "(list .item)"},
}

// printViews renders e over every view of one state templates may see:
// plain stores (htc render, the live loop), an Overlay that changes
// nothing templates print (an admission), a Without hiding nothing (a
// diagnosis), a snapshot (a render done again), twice; and a render
// reusing the fragment records of a recording one. The store "sel" says
// which snippets the outer template and the fragments include.
func printViews(t *testing.T, e *Engine, live, sel *store.Store) map[string]string {
	t.Helper()
	b, _ := live.ByName("ns", "b")
	copyOfB := &unstructured.Unstructured{Object: maps.Clone(b.Object)}
	plain := store.Set{"cms": live, "sel": sel}
	overlay, err := plain.WithChange("cms", store.Change{Operation: store.Update, Object: copyOfB, OldObject: b})
	require.NoError(t, err)
	render := func(in Input) string {
		in.BaseDir = "/b"
		bdl, err := e.Render(context.Background(), in)
		if err != nil {
			return "error: " + err.Error()
		}
		return bdl.Config
	}
	views := map[string]string{
		"plain":    render(Input{Stores: plain, Full: true}),
		"again":    render(Input{Stores: plain, Full: true}),
		"overlay":  render(Input{Stores: overlay, Full: true}),
		"without":  render(Input{Stores: store.Set{"cms": store.NewWithout(live), "sel": sel}, Full: true}),
		"snapshot": render(Input{Stores: plain.Snapshot(), Full: true}),
	}
	render(Input{Stores: plain, Record: true})
	views["reused"] = render(Input{Stores: overlay})
	return views
}

// address is how fmt prints a pointer with %v, %p or %x.
var address = regexp.MustCompile(`0x[0-9a-f]{8,}`)

func TestValuesPrintAlikeInEveryView(t *testing.T) {
	live := appsStore(t)
	require.NoError(t, live.Add(app("a", "1")))
	require.NoError(t, live.Add(app("b", "2")))
	var exprs []string
	for _, v := range printVerbs {
		exprs = append(exprs, fmt.Sprintf("{{ printf %q @ }}", v))
	}
	exprs = append(exprs, printFuncs...)
	// One engine: a snippet per use, the one rendered chosen by the
	// object "sel" (outer: spec.v; in the fragment: spec.f).
	opts := []specOpt{withSnippet("none", ""),
		withSnippet("f", `{{ with .item.metadata }}{{ emit "ch" .name $.item }}{{ end }}{{ include ($.resources.sel.Get "ns" "sel").spec.f . }};`)}
	type use struct{ where, snippet, text string }
	var uses []use
	for _, where := range []string{"outer", "fragment"} {
		for _, x := range printedValues[where] {
			for _, expr := range exprs {
				u := use{where: where, snippet: fmt.Sprintf("use%d", len(uses)), text: strings.ReplaceAll(expr, "@", x)}
				uses, opts = append(uses, u), append(opts, withSnippet(u.snippet, u.text))
			}
		}
	}
	// The fragments' items: store objects, and a dict the render built
	// (frozen: a copy).
	e := mustEngine(t, `{{ fragments "f" .resources.cms }}{{ fragments "f" (list (dict "l" (list 1) "m" (dict) "n" (rest (list)))) }}|{{ include (.resources.sel.Get "ns" "sel").spec.v . }}`, opts...)
	for _, u := range uses {
		sel := appsStore(t)
		outer, inFragment := u.snippet, "none"
		if u.where == "fragment" {
			outer, inFragment = "none", u.snippet
		}
		require.NoError(t, sel.Add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Sel",
			"metadata": map[string]any{"namespace": "ns", "name": "sel"}, "spec": map[string]any{"v": outer, "f": inFragment}}}))
		views := printViews(t, e, live, sel)
		for view, text := range views {
			assert.Equal(t, views["plain"], text, "%s, in %s: %s prints otherwise than over plain stores", view, u.where, u.text)
		}
		assert.NotRegexp(t, address, views["plain"], "%s, in %s: an address", u.text, u.where)
	}
}
