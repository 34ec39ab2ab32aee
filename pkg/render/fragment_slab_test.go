package render

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestARenderKeepsNoRecordOfASlabItUsesLittleOf: a recording render over
// ten Ingresses, then nine of them replaced: the next recording render
// runs their fragments again and reuses the tenth's record, which it
// copies into its own slab (fragments.Table.End: it uses one record in
// ten of the first slab), so neither its table nor its bundle's source
// map holds the first render's record: it goes once the first render's
// bundle does. Its output is the full render's.
func TestARenderKeepsNoRecordOfASlabItUsesLittleOf(t *testing.T) {
	s, err := store.New(nsName)
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, s.Add(&unstructured.Unstructured{Object: ingress("ns", fmt.Sprint("i", i), "a.example.com", "svc")}))
	}
	set := store.Set{"ingresses": s}
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `[{{ .item.metadata.name }} {{ (index .item.spec.rules 0).host }}]`))
	in := Input{Stores: set, BaseDir: "/b", Record: true}
	renderText(t, e, in)
	kept := keptRecord(t, e.table.Load(), "[i9 a.example.com]")

	for i := range 9 {
		require.NoError(t, s.Update(&unstructured.Unstructured{Object: ingress("ns", fmt.Sprint("i", i), "b.example.com", "svc")}))
	}
	b, err := e.Render(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, 9, int(e.FragmentStats().Ran)-10, "nine ran again")
	var want strings.Builder
	for i := range 9 {
		fmt.Fprintf(&want, "[i%d b.example.com]", i)
	}
	assert.Equal(t, want.String()+"[i9 a.example.com]", b.Config)
	full, err := e.Render(t.Context(), Input{Stores: set, BaseDir: "/b", Full: true})
	require.NoError(t, err)
	assert.Equal(t, full.Config, b.Config)

	runtime.GC()
	runtime.GC()
	assert.Nil(t, kept.Value(), "the first render's record of i9 was collected")
	_ = b.Sources() // the bundle's source map still builds, from the copy
	runtime.KeepAlive(b)
}

// keptRecord returns a weak pointer to the record of t with text.
//
//go:noinline
func keptRecord(t *testing.T, tbl *fragments.Table, text string) weak.Pointer[fragments.Record] {
	t.Helper()
	for _, r := range tbl.Records {
		if r.Text == text {
			return weak.Make(r)
		}
	}
	require.Fail(t, "no record", text)
	return weak.Pointer[fragments.Record]{}
}

// TestARecordAppliedAlikeIsKeptInTheRecordingTablesSlab: after a status
// write replaced the Service both Ingresses' fragments read, the next
// recording render applies their records with the object read now; the
// copies it makes are kept in its own slab (fragments.Table.KeepCopy), not
// among its garbage pointing into the first render's slab, so the first
// render's records go once its bundle does. The next render reuses them
// as kept, and every output is the full render's.
func TestARecordAppliedAlikeIsKeptInTheRecordingTablesSlab(t *testing.T) {
	stores, set := fragmentStores(t)
	e := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ $s := .resources.services.Get "ns" "svc-a" }}{{ .item.metadata.name }}:{{ $s.spec.ports }} `))
	in := Input{Stores: set, BaseDir: "/b", Record: true}
	renderText(t, e, in)
	first := keptRecord(t, e.table.Load(), "a:[map[port:80]] ")

	old, ok := stores["services"].ByName("ns", "svc-a")
	require.True(t, ok)
	require.NoError(t, stores["services"].Update(statusCopy(old.Object, "written")))
	b, err := e.Render(t.Context(), in)
	require.NoError(t, err)
	assert.Equal(t, FragmentStats{Reused: 2, Alike: 2, Ran: 2}, e.FragmentStats())
	full, err := e.Render(t.Context(), Input{Stores: set, BaseDir: "/b", Full: true})
	require.NoError(t, err)
	assert.Equal(t, full.Config, b.Config)

	runtime.GC()
	runtime.GC()
	assert.Nil(t, first.Value(), "the first render's record was collected")
	assert.Equal(t, full.Config, renderText(t, e, Input{Stores: set, BaseDir: "/b"}))
	assert.Equal(t, FragmentStats{Reused: 4, Alike: 2, Ran: 4}, e.FragmentStats(), "reused as kept (the full render ran both)")
	runtime.KeepAlive(b)
}
