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
