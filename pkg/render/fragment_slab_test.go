package render

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
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
// copies into its own slab (fragments.Table.End copies every record of
// an earlier slab), so neither its table nor its bundle's source
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

// TestARecordsTextIsItsRendersOutput: the records of a recording render
// hold as their text the bytes of the output they wrote it to (the
// config, a map), which its bundle keeps, and a copy when they wrote it
// into captured text (an include); the next recording render, which
// reuses most of them, renders the full render's outputs, and its
// records' texts are its own outputs' bytes or copies likewise.
func TestARecordsTextIsItsRendersOutput(t *testing.T) {
	s, err := store.New(nsName)
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, s.Add(&unstructured.Unstructured{Object: ingress("ns", fmt.Sprint("i", i), "a.example.com", "svc")}))
	}
	set := store.Set{"ingresses": s}
	e := mustEngine(t, `cfg {{ fragments "f" .resources.ingresses }} {{ include "g" . }}`,
		withMap("m", `{{ fragments "h" .resources.ingresses }}`),
		withSnippet("f", `[{{ .item.metadata.name }} {{ (index .item.spec.rules 0).host }}]`),
		withSnippet("g", `<{{ fragments "i" .resources.ingresses }}>`),
		withSnippet("h", `{{ .item.metadata.name }} {{ (index .item.spec.rules 0).host }}{{ "\n" }}`),
		withSnippet("i", `({{ .item.metadata.name }})`))
	in := Input{Stores: set, BaseDir: "/b", Record: true}
	for round := range 2 {
		if round > 0 {
			require.NoError(t, s.Update(&unstructured.Unstructured{Object: ingress("ns", "i1", "b.example.com", "svc")}))
		}
		b, err := e.Render(t.Context(), in)
		require.NoError(t, err)
		full, err := e.Render(t.Context(), Input{Stores: set, BaseDir: "/b", Full: true})
		require.NoError(t, err)
		assert.Equal(t, full.Config, b.Config, "round %d", round)
		assert.Equal(t, full.Maps, b.Maps, "round %d", round)
		tbl := e.table.Load()
		require.Len(t, tbl.Records, 12)
		inOutput := 0
		for _, r := range tbl.Records {
			switch {
			case within(r.Text, b.Config), within(r.Text, b.Maps["m"]):
				inOutput++
			default:
				assert.True(t, strings.HasPrefix(r.Text, "("), "only the include's records are copies: %q", r.Text)
			}
		}
		assert.Equal(t, 8, inOutput, "round %d: the config's and the map's records", round)
	}
}

// within reports whether s is a part of the bytes of o.
func within(s, o string) bool {
	if s == "" || o == "" {
		return false
	}
	p, q := uintptr(unsafe.Pointer(unsafe.StringData(o))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return q >= p && q+uintptr(len(s)) <= p+uintptr(len(o))
}
