package render

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// fragmentStores is two Ingresses and the Service of one, in real stores.
func fragmentStores(t *testing.T) (map[string]*store.Store, store.Set) {
	t.Helper()
	stores := map[string]*store.Store{}
	set := store.Set{}
	for _, key := range []string{"ingresses", "services"} {
		s, err := store.New(nsName)
		require.NoError(t, err)
		stores[key], set[key] = s, s
	}
	for _, obj := range []map[string]any{ingress("ns", "a", "a.example.com", "svc-a"), ingress("ns", "b", "b.example.com", "svc-b")} {
		require.NoError(t, stores["ingresses"].Add(&unstructured.Unstructured{Object: obj}))
	}
	require.NoError(t, stores["services"].Add(&unstructured.Unstructured{Object: service("ns", "svc-a")}))
	return stores, set
}

func renderText(t *testing.T, e *Engine, in Input) string {
	t.Helper()
	b, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	return b.Config
}

func TestFragmentsRenderTheirTemplateForEachItem(t *testing.T) {
	_, set := fragmentStores(t)
	tests := []struct {
		name, cfg, want string
	}{
		{"a store, in its order", `{{ fragments "f" .resources.ingresses }}`, "[ns/a][ns/b]"},
		{"a list, in order", `{{ fragments "g" (list "z" "y") }}`, "<z:><y:>"},
		{"a dict, in key order, with its keys", `{{ fragments "g" (dict "k2" "v2" "k1" "v1") }}`, "<v1:k1><v2:k2>"},
		{"nothing", `{{ fragments "g" nil }}-`, "-"},
		{"the extra context", `{{ fragments "x" (list 1) }}`, "port 80"},
		{"text where the call is", `a{{ fragments "g" (list "m") }}b`, "a<m:>b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEngine(t, tt.cfg,
				withSnippet("f", `[{{ .item.metadata.namespace }}/{{ .item.metadata.name }}]`),
				withSnippet("g", `<{{ .item }}:{{ .key }}>`),
				withSnippet("x", `port {{ .extraContext.port }}`),
				withExtra(`{"port": 80}`))
			assert.Equal(t, tt.want, renderText(t, e, Input{Stores: set}))
		})
	}
}

func TestFragmentsRefuseWhatTheyCannotKeep(t *testing.T) {
	_, set := fragmentStores(t)
	tests := []struct {
		name, cfg, snippet, want string
	}{
		{"items of another type", `{{ fragments "f" 3 }}`, `x`, `fragments: want a store, a list or a dict of items, got int`},
		{"an item that is no data", `{{ fragments "f" (list .resources) }}`, `x`, `cannot be a fragment's input`},
		{"a template that does not exist", `{{ fragments "nope" (list 1) }}`, `x`, `fragments "nope": no such template`},
		{"fragments inside a fragment", `{{ fragments "f" (list 1) }}`, `{{ fragments "f" (list 2) }}`, `a fragment cannot render fragments`},
		{"emit outside a fragment", `{{ emit "c" "k" "v" }}`, `x`, `only a fragment may emit`},
		{"emitted inside a fragment", `{{ fragments "f" (list 1) }}`, `{{ emitted "c" }}`, `a fragment cannot read a channel`},
		{"emit after the channel was read", `{{ emitted "c" }}{{ fragments "f" (list 1) }}`, `{{ emit "c" "k" "v" }}`, `emitted already read the channel`},
		{"emitting no data", `{{ fragments "f" (list 1) }}`, `{{ emit "c" "k" .resources }}`, `cannot be a fragment's input or an emitted value`},
		{"modifying its item", `{{ fragments "f" (list (dict "a" 1)) }}`, `{{ $_ := set .item "a" 2 }}`, `set: cannot modify`},
		{"modifying its dot", `{{ fragments "f" (list 1) }}`, `{{ $_ := set . "a" 2 }}`, `set: cannot modify`},
		{"modifying an emitted dict", `{{ fragments "f" (list 1) }}{{ $_ := set (emitted "c") "k" 1 }}`, `{{ emit "c" "k" (dict "a" 1) }}`, `set: cannot modify`},
		{"modifying an emitted value", `{{ fragments "f" (list 1) }}{{ $_ := set (get (emitted "c") "k") "a" 2 }}`, `{{ emit "c" "k" (dict "a" 1) }}`, `set: cannot modify`},
		{"an error located in the fragment's template", `{{ fragments "f" (list 1) }}`, "\n{{ .item.x.y }}", `template f line 2: `},
		{"pathFor of a file added outside it", `{{ addFile "map" "x.map" "" }}{{ fragments "f" (list 1) }}`, `{{ pathFor "map" "x.map" }}`, `no such map in spec.maps or added by this fragment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEngine(t, tt.cfg, withSnippet("f", tt.snippet))
			_, err := e.Render(context.Background(), Input{Stores: set})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFragmentsMayModifyOnlyWhatTheyBuild(t *testing.T) {
	e := mustEngine(t, `{{ $d := dict "n" 1 }}{{ fragments "f" (list $d) }}{{ $d.n }}`,
		withSnippet("f", `{{ $own := deepCopy .item }}{{ $_ := set $own "n" 2 }}{{ $own.n }}/{{ .item.n }} `))
	assert.Equal(t, "2/1 1", renderText(t, e, Input{}))
}

func TestEmitKeepsTheFirstValueOfAKey(t *testing.T) {
	e := mustEngine(t, `{{ fragments "f" (list "a" "b" "c") }}{{ range $k, $v := emitted "c" }}{{ $k }}={{ $v }} {{ end }}{{ len (emitted "none") }}`,
		withSnippet("f", `{{ emit "c" "same" .item }}{{ emit "c" .item .item }}`))
	assert.Equal(t, "a=a b=b c=c same=a 0", renderText(t, e, Input{}))
}

func TestEmittedWithAPrefixReturnsTheKeysThatBeginWithIt(t *testing.T) {
	e := mustEngine(t, `{{ fragments "f" (list "a/1" "a/2" "ab" "b/1" "a") }}`+
		`{{ range $k, $v := emitted "c" "a/" }}{{ $k }}={{ $v }} {{ end }}|{{ len (emitted "c" "z") }}|{{ len (emitted "c" "") }}|{{ len (emitted "c") }}`,
		withSnippet("f", `{{ emit "c" .item .item }}`))
	assert.Equal(t, "a/1=a/1 a/2=a/2 |0|5|5", renderText(t, e, Input{}))
	_, err := mustEngine(t, `{{ emitted "c" "a" "b" }}`).Render(context.Background(), Input{})
	require.ErrorContains(t, err, "want one key prefix at most")
	_, err = mustEngine(t, `{{ $m := emitted "c" "a" }}{{ $_ := set $m "x" 1 }}`).Render(context.Background(), Input{})
	require.Error(t, err, "the dict emitted returns cannot be modified")
}

func TestEmittedValuesAreFrozen(t *testing.T) {
	// A list the fragment built is copied when emitted: appending to it
	// afterwards in the fragment does not change the emitted value.
	e := mustEngine(t, `{{ fragments "f" (list 1) }}{{ get (emitted "c") "k" }}`,
		withSnippet("f", `{{ $l := list "x" }}{{ emit "c" "k" $l }}{{ $l = append $l "y" }}`))
	assert.Equal(t, "[x]", renderText(t, e, Input{}))
}

func TestFragmentsAreReusedWhileWhatTheyReadIsUnchanged(t *testing.T) {
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ $svc := .resources.services.Get .item.metadata.namespace (field .item "spec.rules[0].http.paths[0].backend.service.name") }}{{ .item.metadata.name }}:{{ if $svc }}ok{{ else }}missing{{ end }} `))
	base := "/etc/haproxy"
	counts := func() FragmentStats { return e.FragmentStats() }

	first := renderText(t, e, Input{Stores: set, BaseDir: base, Record: true})
	assert.Equal(t, "a:ok b:missing ", first)
	assert.Equal(t, FragmentStats{Ran: 2}, counts())

	again := renderText(t, e, Input{Stores: set, BaseDir: base})
	assert.Equal(t, first, again)
	assert.Equal(t, FragmentStats{Reused: 2, Ran: 2}, counts(), "both reused")

	// A proposal that creates the Service b reads: b runs again, a not.
	proposal, err := set.WithChange("services", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: service("ns", "svc-b")}})
	require.NoError(t, err)
	assert.Equal(t, "a:ok b:ok ", renderText(t, e, Input{Stores: proposal, BaseDir: base}))
	assert.Equal(t, FragmentStats{Reused: 3, Ran: 3}, counts())

	// Another BaseDir or size limit, or a full render, reuses nothing.
	renderText(t, e, Input{Stores: set, BaseDir: "/elsewhere"})
	renderText(t, e, Input{Stores: set, BaseDir: base, MaxBytes: 1 << 20})
	renderText(t, e, Input{Stores: set, BaseDir: base, Full: true})
	assert.Equal(t, FragmentStats{Reused: 3, Ran: 9}, counts())

	// The live store changes (the Service a reads is deleted): a runs again.
	old, ok := stores["services"].ByName("ns", "svc-a")
	require.True(t, ok)
	require.NoError(t, stores["services"].Delete(old))
	assert.Equal(t, "a:missing b:missing ", renderText(t, e, Input{Stores: set, BaseDir: base}))
	assert.Equal(t, FragmentStats{Reused: 4, Ran: 10}, counts())
}

func TestFragmentReadsOfChangedKeysAreMadeAgain(t *testing.T) {
	// A read is trusted without being made again only when its store is
	// at the recorded generation and the read's keys are not those an
	// overlay changes: here a Fetch of the namespace the proposal adds to.
	_, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" (list "ns" "other") }}`,
		withSnippet("f", `{{ .item }}={{ len (.resources.services.Fetch .item) }} `))
	assert.Equal(t, "ns=1 other=0 ", renderText(t, e, Input{Stores: set, Record: true}))
	proposal, err := set.WithChange("services", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: service("other", "x")}})
	require.NoError(t, err)
	assert.Equal(t, "ns=1 other=1 ", renderText(t, e, Input{Stores: proposal}))
	assert.Equal(t, FragmentStats{Reused: 1, Ran: 3}, e.FragmentStats())
}

func TestFragmentPartsAreItsObjects(t *testing.T) {
	_, set := fragmentStores(t)
	e := mustEngine(t, "head\n{{ fragments \"f\" .resources.ingresses }}tail\n",
		withSnippet("f", `{{ $svc := .resources.services.Get "ns" "svc-a" }}{{ addFile "cert" (printf "%s.pem" .item.metadata.name) "x" }}{{ .item.metadata.name }}
`))
	for _, in := range []Input{{Stores: set, Record: true}, {Stores: set}} {
		b, err := e.Render(context.Background(), in)
		require.NoError(t, err)
		src := b.Sources()
		require.NotNil(t, src)
		for line, want := range map[int]string{1: "", 2: "Ingress ns/a", 3: "Ingress ns/b", 4: ""} {
			got, ok := src.LineObject(bundle.ConfigFileName, line)
			if want == "" {
				assert.False(t, ok, "line %d", line)
				continue
			}
			assert.Equal(t, want, got.String(), "line %d", line)
		}
		owner, ok := src.LineObject("certs/b.pem", 1)
		require.True(t, ok)
		assert.Equal(t, "Ingress ns/b", owner.String())
		svc := bundle.ObjectRef{Store: "services", Kind: "Service", Namespace: "ns", Name: "svc-a"}
		assert.Equal(t, []string{"Ingress ns/a", "Ingress ns/b"}, refStrings(src.Readers(svc)))
	}
}

func refStrings(refs []bundle.ObjectRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.String())
	}
	return out
}

func TestAFragmentFailureIsItsObjects(t *testing.T) {
	_, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ if eq .item.metadata.name "b" }}{{ fail "b is broken" }}{{ end }}`))
	for range 2 {
		_, err := e.Render(context.Background(), Input{Stores: set, Record: true})
		pe := renderErr(t, err)
		assert.Equal(t, "b is broken", pe.Reason)
		var ae *AttributedError
		require.True(t, errors.As(err, &ae))
		assert.Equal(t, []string{"Ingress ns/b"}, refStrings(ae.Objects()))
	}
}

func TestARenderThatReusedAndFailedIsRenderedInFull(t *testing.T) {
	// Reused, a record charges the scratch budget what its fragment
	// charged, in one go: running out there would name the fragments, not
	// the function that ran out. A render that reused and failed is
	// rendered again in full, which names repeat.
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ if gt (.resources.services.Len) 1 }}{{ $a := repeat 3000 "z" }}{{ $b := repeat 3000 "z" }}{{ $c := repeat 3000 "z" }}{{ end }}{{ fragments "f" (until 40) }}`,
		withSnippet("f", `{{ $x := repeat 200 "y" }}`))
	in := Input{Stores: set, MaxBytes: 4096, Record: true}
	_, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	require.NoError(t, stores["services"].Add(&unstructured.Unstructured{Object: service("ns", "svc-b")}))
	_, err = e.Render(context.Background(), Input{Stores: set, MaxBytes: 4096})
	pe := renderErr(t, err)
	assert.Contains(t, pe.Reason, "repeat: the values this render builds would exceed")
	assert.Equal(t, int64(1), e.FragmentStats().Confirmed)
}

// TestFragmentRecordsAreSharedSafely renders fragments from many
// goroutines at once, reusing the records of a recording render that runs
// beside them, and copies and modifies what emitted returned: under -race,
// nothing a record holds is written by two renders.
func TestFragmentRecordsAreSharedSafely(t *testing.T) {
	_, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}{{ range $k, $v := emitted "c" }}{{ $k }}={{ $v.name }}{{ $c := deepCopy $v }}{{ $_ := set $c "name" "x" }};{{ end }}`,
		withSnippet("f", `{{ emit "c" .item.metadata.name (dict "name" .item.metadata.name "obj" .item) }}{{ .item.metadata.name }} `))
	want := renderText(t, e, Input{Stores: set, Record: true})
	done := make(chan string, 17)
	for g := range 17 {
		go func() {
			for range 20 {
				b, err := e.Render(context.Background(), Input{Stores: set, Record: g == 0})
				if err != nil {
					done <- err.Error()
					return
				}
				if b.Config != want {
					done <- b.Config
					return
				}
			}
			done <- ""
		}()
	}
	for range 17 {
		assert.Empty(t, <-done)
	}
	assert.Positive(t, e.FragmentStats().Reused)
}
