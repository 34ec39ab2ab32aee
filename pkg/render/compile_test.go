package render

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestTemplatesShareTheSetOfTheSameSources: an engine whose template
// sources and output names are those of an engine built before takes its
// template set; any other change of a source or a name compiles another.
// Either way the engine renders what an engine render.New built renders
// (the memo against the full computation).
func TestTemplatesShareTheSetOfTheSameSources(t *testing.T) {
	_, set := fragmentStores(t)
	const cfg = "{{ fragments \"f\" .resources.ingresses }}\n{{ .extraContext.port }}\n"
	base := []specOpt{
		withSnippet("f", `[{{ .item.metadata.name }} {{ include "g" . }}]`),
		withSnippet("g", `<{{ (.resources.services.Get .item.metadata.namespace "svc-a").metadata.name }}>`),
		withMap("m", `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ "\n" }}{{ end }}`),
		withFile("f.txt", `file`),
		withCert("c.pem", `cert`),
		withExtra(`{"port": 80}`),
		withStatus(`{{ if .resources.ingresses.List }}{{ end }}`),
	}
	tests := []struct {
		name    string
		cfg     string
		changed []specOpt
		shared  bool
	}{
		{name: "the same spec", shared: true},
		{name: "extraContext changed (not a template source)", changed: []specOpt{withExtra(`{"port": 81}`)}, shared: true},
		{name: "haproxy.cfg changed by one character", cfg: cfg + " ", shared: false},
		{name: "a snippet changed", changed: []specOpt{withSnippet("g", `<{{ .item.metadata.namespace }}>`)}},
		{name: "a snippet added", changed: []specOpt{withSnippet("h", `h`)}},
		{name: "a map's template changed", changed: []specOpt{withMap("m", `m`)}},
		{name: "a map added with another's text", changed: []specOpt{withMap("n", `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ "\n" }}{{ end }}`)}},
		{name: "a map turned into a snippet of its template's name and text", changed: []specOpt{withoutMap("m"), withSnippet("map:m", `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ "\n" }}{{ end }}`)}},
		{name: "a file's template changed", changed: []specOpt{withFile("f.txt", `other`)}},
		{name: "a certificate's template changed", changed: []specOpt{withCert("c.pem", `other`)}},
		{name: "the status template changed", changed: []specOpt{withStatus(`{{ "" }}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templates := NewTemplates(4)
			first, err := templates.New(newSpec(cfg, base...))
			require.NoError(t, err)
			_, err = first.Render(context.Background(), Input{Stores: set, BaseDir: "/b", Record: true})
			require.NoError(t, err)

			newCfg := cfg
			if tt.cfg != "" {
				newCfg = tt.cfg
			}
			spec := newSpec(newCfg, append(append([]specOpt{}, base...), tt.changed...)...)
			second, err := templates.New(spec)
			require.NoError(t, err)
			assert.Equal(t, tt.shared, second.compiled == first.compiled, "the template set is shared")

			fresh, err := New(spec)
			require.NoError(t, err)
			want, err := fresh.Render(context.Background(), Input{Stores: set, BaseDir: "/b"})
			require.NoError(t, err)
			got, err := second.Render(context.Background(), Input{Stores: set, BaseDir: "/b"})
			require.NoError(t, err)
			assert.Equal(t, want.Hash(), got.Hash(), "the engine renders what render.New's renders")
			assert.Equal(t, fresh.Reads().Fields("ingresses"), second.Reads().Fields("ingresses"))
		})
	}
}

// TestTemplatesShareTheExtraContextOfTheSameJSON: an engine whose
// extraContext is the JSON of an engine built before takes its decoded
// map; other JSON is decoded again. Either way the map is the one a fresh
// decode gives (the memo against the full computation), and a refused
// extraContext is refused again with the same error and nothing is kept.
func TestTemplatesShareTheExtraContextOfTheSameJSON(t *testing.T) {
	const first = `{"port": 80, "hosts": ["a", "b"]}`
	tests := []struct {
		name   string
		second *runtime.RawExtension
		shared bool
	}{
		{name: "the same JSON", second: &runtime.RawExtension{Raw: []byte(first)}, shared: true},
		{name: "another value", second: &runtime.RawExtension{Raw: []byte(`{"port": 81, "hosts": ["a", "b"]}`)}},
		{name: "the same object spaced otherwise", second: &runtime.RawExtension{Raw: []byte(`{"port":80,"hosts":["a","b"]}`)}},
		{name: "an object and no raw bytes", second: &runtime.RawExtension{Object: &unstructured.Unstructured{Object: map[string]any{"port": int64(80)}}}},
		{name: "null", second: &runtime.RawExtension{Raw: []byte(`null`)}},
		{name: "none", second: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templates := NewTemplates(4)
			a, err := templates.New(newSpec("x", withExtra(first)))
			require.NoError(t, err)
			spec := newSpec("x")
			spec.ExtraContext = tt.second
			b, err := templates.New(spec)
			require.NoError(t, err)
			fresh, err := New(spec)
			require.NoError(t, err)
			assert.Equal(t, fresh.extra, b.extra, "the decoded extraContext is a fresh decode's")
			assert.Equal(t, tt.shared, reflect.ValueOf(a.extra).UnsafePointer() == reflect.ValueOf(b.extra).UnsafePointer(), "the map is shared")
		})
	}
	t.Run("refused", func(t *testing.T) {
		templates := NewTemplates(4)
		_, err1 := templates.New(newSpec("x", withExtra(`[1]`)))
		_, err2 := templates.New(newSpec("x", withExtra(`[1]`)))
		require.Error(t, err1)
		assert.Contains(t, err1.Error(), "spec.extraContext: must be a JSON object")
		assert.Equal(t, err1.Error(), err2.Error())
		assert.Zero(t, templates.extras.Len())
	})
}

// TestTemplatesKeepNoFailedCompile: a config whose templates fail is
// refused again, with the same error, and nothing is kept for it.
func TestTemplatesKeepNoFailedCompile(t *testing.T) {
	templates := NewTemplates(4)
	spec := newSpec(`{{ template "missing" }}`)
	_, first := templates.New(spec)
	_, second := templates.New(spec)
	require.Error(t, first)
	assert.Equal(t, first.Error(), second.Error())
	assert.Zero(t, templates.sets.Len())
}

// TestTemplatesKeepAtMostTheirBound: the least recently used set is
// dropped first.
func TestTemplatesKeepAtMostTheirBound(t *testing.T) {
	templates := NewTemplates(2)
	build := func(cfg string) *Engine {
		e, err := templates.New(newSpec(cfg))
		require.NoError(t, err)
		return e
	}
	a, b := build("a"), build("b")
	assert.Same(t, a.compiled, build("a").compiled, "a is kept")
	build("c") // drops b, the least recently used
	assert.Equal(t, 2, templates.sets.Len())
	assert.Same(t, a.compiled, build("a").compiled, "a is still kept")
	assert.NotSame(t, b.compiled, build("b").compiled, "b was dropped")
}

// TestEnginesSharingATemplateSetRenderApart: engines sharing one template
// set render at once over other stores, each recording its own fragment
// records, and each renders what a fresh engine renders (go test -race
// checks that they write nothing they share).
func TestEnginesSharingATemplateSetRenderApart(t *testing.T) {
	templates := NewTemplates(4)
	const cfg = `{{ fragments "f" .resources.ingresses }}`
	opts := []specOpt{withSnippet("f", `[{{ .item.metadata.name }} {{ .item.spec.rules }}]`)}
	stores := func(names ...string) store.Set {
		s, err := store.New(nsName)
		require.NoError(t, err)
		for _, n := range names {
			require.NoError(t, s.Add(&unstructured.Unstructured{Object: ingress("ns", n, n+".example.com", "svc")}))
		}
		return store.Set{"ingresses": s}
	}
	sets := []store.Set{stores("a", "b"), stores("c"), stores("a", "d", "e")}
	engines := make([]*Engine, len(sets))
	for i := range engines {
		e, err := templates.New(newSpec(cfg, opts...))
		require.NoError(t, err)
		engines[i] = e
	}
	require.Same(t, engines[0].compiled, engines[2].compiled)
	got := make([]string, len(sets))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			for range 3 {
				b, err := e.Render(context.Background(), Input{Stores: sets[i], BaseDir: "/b", Record: true})
				if !assert.NoError(t, err) {
					return
				}
				got[i] = b.Config
			}
		})
	}
	wg.Wait()
	for i, s := range sets {
		assert.Equal(t, renderText(t, mustEngine(t, cfg, opts...), Input{Stores: s, BaseDir: "/b"}), got[i], "engine %d", i)
	}
}

func withoutMap(name string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) { delete(s.Maps, name) }
}
