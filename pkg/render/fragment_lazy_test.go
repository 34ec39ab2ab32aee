package render

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// TestLazyChannelsAreTheFullRendersChannels: over a recorded render of
// ingresses a, b and c (each emitting its namespace, whose first value
// wins, and its name), a proposal (an ingress added before all others,
// between two, after all; one deleted or changed: its record skipped) is
// rendered as a full render renders it, with the channels read as the
// recording render had them, and so is the next proposal after the next
// recording render.
func TestLazyChannelsAreTheFullRendersChannels(t *testing.T) {
	cfg := `{{ fragments "f" .resources.ingresses }}{{ fragments "h" (list 1 2) }}{{ range $k, $v := emitted "c" }}{{ $k }}={{ $v }} {{ end }}|{{ keys (emitted "c" "n") }}|{{ fragments "g" (emitted "c") }}|{{ len (emitted "none") }}`
	opts := []specOpt{
		withSnippet("f", `{{ emit "c" .item.metadata.namespace .item.metadata.name }}{{ emit "c" (printf "name-%s" .item.metadata.name) .item.metadata.name }}`),
		withSnippet("g", `[{{ .key }}]`),
		withSnippet("h", `<{{ .item }}>`), // records after f's, before the reads
	}
	for _, tc := range []struct {
		name string
		op   store.Operation
		obj  string
	}{
		{name: "a first ingress: its namespace's value is the new one", op: store.Create, obj: "0"},
		{name: "an ingress between two: the table's value stays", op: store.Create, obj: "bb"},
		{name: "a last ingress", op: store.Create, obj: "z"},
		{name: "a deleted ingress: its keys are gone", op: store.Delete, obj: "b"},
		{name: "the first deleted: its namespace's value is the next one's", op: store.Delete, obj: "a"},
		{name: "the last deleted", op: store.Delete, obj: "c"},
		{name: "a changed ingress", op: store.Update, obj: "b"},
		{name: "the first changed: its new value is first", op: store.Update, obj: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stores, set := fragmentStores(t)
			require.NoError(t, stores["ingresses"].Add(&unstructured.Unstructured{Object: ingress("ns", "c", "c.example.com", "svc-c")}))
			e := mustEngine(t, cfg, opts...)
			live := renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true})
			assert.Equal(t, "<1><2>name-a=a name-b=b name-c=c ns=a |[name-a name-b name-c ns]|[name-a][name-b][name-c][ns]|0", live)
			obj := &unstructured.Unstructured{Object: ingress("ns", tc.obj, "x.example.com", "svc-x")}
			change := store.Change{Operation: tc.op, Object: obj}
			if tc.op != store.Create {
				old, ok := stores["ingresses"].ByName("ns", tc.obj)
				require.True(t, ok)
				change.OldObject = old
				if tc.op == store.Delete {
					change.Object = old
				} else {
					obj.Object["spec"].(map[string]any)["ingressClassName"] = "other"
				}
			}
			proposal, err := set.WithChange("ingresses", change)
			require.NoError(t, err)
			want := renderText(t, e, Input{Stores: proposal, BaseDir: "/b", Full: true})
			before := e.FragmentStats().Lazy
			assert.Equal(t, want, renderText(t, e, Input{Stores: proposal, BaseDir: "/b"}))
			assert.Equal(t, int64(2), e.FragmentStats().Lazy-before, "channels c and none read from the table")
			// The next recording render keeps channels a later proposal
			// reads as a full render does.
			testutilApply(t, stores["ingresses"], change)
			renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true})
			next, err := set.WithChange("ingresses", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: ingress("ns", "b0", "y.example.com", "svc-y")}})
			require.NoError(t, err)
			assert.Equal(t, renderText(t, e, Input{Stores: next, BaseDir: "/b", Full: true}), renderText(t, e, Input{Stores: next, BaseDir: "/b"}))
		})
	}
}

// testutilApply makes change in s, as the informers would.
func testutilApply(t *testing.T, s *store.Store, change store.Change) {
	t.Helper()
	switch change.Operation {
	case store.Create:
		require.NoError(t, s.Add(change.Object))
	case store.Update:
		require.NoError(t, s.Update(change.Object))
	case store.Delete:
		require.NoError(t, s.Delete(change.OldObject))
	}
}

// TestAChannelReadBeforeItsLastEmitterIsRebuilt: a channel read while a
// record that emitted on it when recorded is still to come is built from
// the records, and that record's emit after the read fails the render as
// in a full render.
func TestAChannelReadBeforeItsLastEmitterIsRebuilt(t *testing.T) {
	_, set := fragmentStores(t)
	cfg := `{{ fragments "f" .resources.ingresses }}{{ if gt (.resources.services.Len) 1 }}{{ len (emitted "c") }}{{ end }}{{ fragments "g" (list 1) }}{{ len (emitted "c") }}`
	e := mustEngine(t, cfg, withSnippet("f", `{{ emit "c" .item.metadata.name 1 }}`), withSnippet("g", `{{ emit "c" "g" 1 }}`))
	assert.Equal(t, "3", renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true}))
	proposal, err := set.WithChange("services", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: service("ns", "svc-b")}})
	require.NoError(t, err)
	_, full := e.Render(context.Background(), Input{Stores: proposal, BaseDir: "/b", Full: true})
	require.ErrorContains(t, full, "emitted already read the channel")
	_, got := e.Render(context.Background(), Input{Stores: proposal, BaseDir: "/b"})
	require.Error(t, got)
	assert.Equal(t, full.Error(), got.Error())
}

// TestAdmissionsOverOneRecordingRenderAtOnceRenderAsInFull: proposals
// rendered at once, each over the channels the one recording render kept
// (read whole, by prefix, and by len, keys, values, get and hasKey of
// emitted), each changing them, render as a full render renders them
// (run with -race: the channels they share are only read).
func TestAdmissionsOverOneRecordingRenderAtOnceRenderAsInFull(t *testing.T) {
	cfg := `{{ fragments "f" .resources.ingresses }}{{ range $k, $v := emitted "c" }}{{ $k }}={{ $v }} {{ end }}|{{ keys (emitted "c" "name-") }}|{{ values (emitted "c") }}|{{ len (emitted "c") }}|{{ get (emitted "c") "ns" }}|{{ hasKey (emitted "c") "name-b" }}|{{ fragments "g" (emitted "c") }}`
	opts := []specOpt{
		withSnippet("f", `{{ emit "c" .item.metadata.namespace .item.metadata.name }}{{ emit "c" (printf "name-%s" .item.metadata.name) .item.metadata.name }}`),
		withSnippet("g", `[{{ .key }}]`),
	}
	stores, set := fragmentStores(t)
	e := mustEngine(t, cfg, opts...)
	renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true})
	var proposals []store.Set
	for _, p := range []struct {
		op  store.Operation
		obj string
	}{{store.Create, "0"}, {store.Create, "aa"}, {store.Create, "z"}, {store.Delete, "a"}, {store.Delete, "b"}, {store.Update, "a"}} {
		obj := &unstructured.Unstructured{Object: ingress("ns", p.obj, "x.example.com", "svc-x")}
		change := store.Change{Operation: p.op, Object: obj}
		if p.op != store.Create {
			old, ok := stores["ingresses"].ByName("ns", p.obj)
			require.True(t, ok)
			change.OldObject = old
			if p.op == store.Delete {
				change.Object = old
			} else {
				obj.Object["spec"].(map[string]any)["ingressClassName"] = "other"
			}
		}
		proposal, err := set.WithChange("ingresses", change)
		require.NoError(t, err)
		proposals = append(proposals, proposal)
	}
	want := make([]string, len(proposals))
	for i, p := range proposals {
		want[i] = renderText(t, e, Input{Stores: p, BaseDir: "/b", Full: true})
	}
	before := e.FragmentStats().Lazy
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for g := range got {
		wg.Go(func() {
			for i := range 20 {
				b, err := e.Render(context.Background(), Input{Stores: proposals[(g+i)%len(proposals)], BaseDir: "/b"})
				if err != nil {
					got[g] = append(got[g], "error: "+err.Error())
					continue
				}
				got[g] = append(got[g], b.Config)
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i, text := range got[g] {
			assert.Equal(t, want[(g+i)%len(proposals)], text, "goroutine %d, render %d", g, i)
		}
	}
	assert.Positive(t, e.FragmentStats().Lazy-before, "channels read from the table")
}
