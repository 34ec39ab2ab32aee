package render

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// statusCopy is a copy of obj (another object) whose status is status:
// a field no template of these tests reads.
func statusCopy(obj map[string]any, status any) *unstructured.Unstructured {
	c := maps.Clone(obj)
	c["status"] = status
	return &unstructured.Unstructured{Object: c}
}

// fullText is a render's outputs and source map, as in the fuzz test.
func fullText(t *testing.T, e *Engine, in Input) string {
	t.Helper()
	b, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	return bundleText(b) + fmt.Sprintf("\nsources: %+v", b.Sources())
}

func TestFragmentsAreReusedWhenWhatTheyReadChangedOnlyWhereNoTemplateLooks(t *testing.T) {
	tests := []struct {
		name string
		// snippet is fragment f's template, over the Ingresses ns/a and ns/b
		// (a's Service svc-a exists).
		snippet string
		// change replaces the Service svc-a in the live store.
		change func(old map[string]any) *unstructured.Unstructured
		// exact renders with Input.ExactReads.
		exact bool
		// ran and alike are the fragments run and reused alike by the
		// render after the change.
		ran, alike int64
	}{
		{name: "a Get whose object changed only its status",
			snippet: `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `,
			change: func(old map[string]any) *unstructured.Unstructured {
				return statusCopy(old, map[string]any{"n": int64(1)})
			},
			alike: 2},
		{name: "a Fetch whose object changed only its status",
			snippet: `{{ range $s := .resources.services.Fetch "ns" }}{{ $s.metadata.name }}{{ end }} `,
			change:  func(old map[string]any) *unstructured.Unstructured { return statusCopy(old, "written") },
			alike:   2},
		{name: "a field the templates read changed",
			snippet: `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `,
			change: func(old map[string]any) *unstructured.Unstructured {
				c := statusCopy(old, nil)
				c.Object["spec"] = map[string]any{"ports": []any{map[string]any{"port": int64(81)}}}
				return c
			},
			ran: 2},
		{name: "the object replaced is emitted: a full render emits the new one",
			snippet: `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ emit "svcs" .item.metadata.name (dict "svc" $s) }}{{ .item.metadata.name }} `,
			change:  func(old map[string]any) *unstructured.Unstructured { return statusCopy(old, "written") },
			ran:     2},
		{name: "the object replaced owns an added file",
			snippet: `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ $_ := addFile "map" (printf "%s.map" .item.metadata.name) "x\n" $s }}`,
			change:  func(old map[string]any) *unstructured.Unstructured { return statusCopy(old, "written") },
			ran:     2},
		{name: "exact reads only",
			snippet: `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `,
			change:  func(old map[string]any) *unstructured.Unstructured { return statusCopy(old, "written") },
			exact:   true, ran: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores, set := fragmentStores(t)
			e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}{{ range $k, $v := emitted "svcs" }}{{ $k }}={{ $v.svc.metadata.name }};{{ end }}`,
				withSnippet("f", tt.snippet))
			renderText(t, e, Input{Stores: set, Record: true})
			old, ok := stores["services"].ByName("ns", "svc-a")
			require.True(t, ok)
			require.NoError(t, stores["services"].Update(tt.change(old.Object)))
			before := e.FragmentStats()
			got := fullText(t, e, Input{Stores: set, ExactReads: tt.exact})
			after := e.FragmentStats()
			assert.Equal(t, tt.ran, after.Ran-before.Ran, "fragments run")
			assert.Equal(t, tt.alike, after.Alike-before.Alike, "records applied with the objects read now")
			assert.Equal(t, 2-tt.ran, after.Reused-before.Reused, "fragments reused")
			assert.Equal(t, fullText(t, e, Input{Stores: set, Full: true}), got, "the render equals a full one, source map included")
		})
	}
}

func TestARecordAppliedAlikeKeepsTheObjectsReadNow(t *testing.T) {
	// The recording render after a status-only change keeps the record
	// with the object read now: the next render reuses it as it is.
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `))
	renderText(t, e, Input{Stores: set, Record: true})
	old, ok := stores["services"].ByName("ns", "svc-a")
	require.True(t, ok)
	require.NoError(t, stores["services"].Update(statusCopy(old.Object, "written")))
	renderText(t, e, Input{Stores: set, Record: true})
	assert.Equal(t, FragmentStats{Reused: 2, Alike: 2, Ran: 2}, e.FragmentStats())
	renderText(t, e, Input{Stores: set})
	assert.Equal(t, FragmentStats{Reused: 4, Alike: 2, Ran: 2}, e.FragmentStats(), "reused as recorded")
}

func TestAnotherObjectWithTheSameFieldsIsNotAlike(t *testing.T) {
	// A Fetch that returns another object (svc-c in place of svc-a) whose
	// read fields are the same: the source map names another object, so
	// the fragment runs again.
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ range $s := .resources.services.Fetch "ns" }}{{ $s.spec.ports }}{{ end }} `))
	renderText(t, e, Input{Stores: set, Record: true})
	old, ok := stores["services"].ByName("ns", "svc-a")
	require.True(t, ok)
	require.NoError(t, stores["services"].Delete(old))
	require.NoError(t, stores["services"].Add(&unstructured.Unstructured{Object: service("ns", "svc-c")}))
	before := e.FragmentStats()
	got := fullText(t, e, Input{Stores: set})
	assert.Equal(t, int64(2), e.FragmentStats().Ran-before.Ran)
	assert.Equal(t, fullText(t, e, Input{Stores: set, Full: true}), got)
}

// TestAProposalAlikeReusesRecords: an admission's overlay replacing an
// object by one that differs only where no template looks reuses the
// records that read it.
func TestAProposalAlikeReusesRecords(t *testing.T) {
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `))
	renderText(t, e, Input{Stores: set, Record: true})
	old, ok := stores["services"].ByName("ns", "svc-a")
	require.True(t, ok)
	proposal, err := set.WithChange("services", store.Change{Operation: store.Update, Object: statusCopy(old.Object, "proposed"), OldObject: old})
	require.NoError(t, err)
	before := e.FragmentStats()
	got := fullText(t, e, Input{Stores: proposal})
	assert.Equal(t, FragmentStats{Reused: 2, Alike: 2}, diffStats(e.FragmentStats(), before))
	assert.Equal(t, fullText(t, e, Input{Stores: proposal, Full: true}), got)
}

// diffStats is a - b.
func diffStats(a, b FragmentStats) FragmentStats {
	return FragmentStats{Reused: a.Reused - b.Reused, Ran: a.Ran - b.Ran, Alike: a.Alike - b.Alike, Confirmed: a.Confirmed - b.Confirmed, Torn: a.Torn - b.Torn}
}
