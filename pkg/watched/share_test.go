package watched

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// slice is an EndpointSlice as an informer decodes it.
func slice(name, addr string) map[string]any {
	return map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{"namespace": "ns", "name": name},
		"endpoints": []any{
			map[string]any{"addresses": []any{addr}, "conditions": map[string]any{"ready": true}},
			map[string]any{"addresses": []any{addr + "0"}, "conditions": map[string]any{"ready": true}},
		},
		"ports": []any{map[string]any{"name": "http", "port": int64(8080)}},
	}
}

func ptr(v any) uintptr { return reflect.ValueOf(v).Pointer() }

func TestShareKeepsOneCopyOfIdenticalParts(t *testing.T) {
	table := NewShareTable(0)
	a := table.Share(slice("a", "10.0.0.1"))
	b := table.Share(slice("b", "10.0.0.2"))

	require.Equal(t, slice("a", "10.0.0.1"), a, "sharing changes no content")
	require.Equal(t, slice("b", "10.0.0.2"), b)
	cond := func(o map[string]any, i int) any {
		return o["endpoints"].([]any)[i].(map[string]any)["conditions"]
	}
	assert.Equal(t, ptr(cond(a, 0)), ptr(cond(a, 1)), "within one object")
	assert.Equal(t, ptr(cond(a, 0)), ptr(cond(b, 1)), "across objects")
	assert.Equal(t, ptr(a["ports"]), ptr(b["ports"]), "a list")
	assert.NotEqual(t, ptr(a["metadata"]), ptr(b["metadata"]), "different content is not shared")
	assert.NotEqual(t, ptr(a["endpoints"]), ptr(b["endpoints"]))

	same := table.Share(slice("a", "10.0.0.1"))
	assert.NotEqual(t, ptr(a), ptr(same), "a root is never shared: each object keeps its identity")
	assert.Equal(t, ptr(a["metadata"]), ptr(same["metadata"]), "below the root, equal content is one map")
}

// Values equal as text but of another kind are told apart: templates see
// the difference (kindIs, printf "%T", a nil map printed as map[]).
func TestShareTellsKindsApart(t *testing.T) {
	values := []any{
		int64(1), float64(1), "1", true, "true", nil, "",
		map[string]any(nil), map[string]any{}, []any(nil), []any{},
		[]any{"a", "b"}, []any{"a,b"}, []any{[]any{"a"}, "b"},
		map[string]any{"a": "b"}, map[string]any{"a\"": "b"}, map[string]any{"ab": ""},
		float64(0), math.Copysign(0, -1), int64(0),
	}
	table := NewShareTable(0)
	var shared []any
	for i, v := range values {
		obj := table.Share(map[string]any{"wrap": map[string]any{"v": v}})
		got := obj["wrap"].(map[string]any)["v"]
		require.Equal(t, fmt.Sprintf("%T %#v", v, v), fmt.Sprintf("%T %#v", got, got), "value %d", i)
		shared = append(shared, obj["wrap"])
	}
	for i := range shared {
		for j := range i {
			if reflect.DeepEqual(values[i], values[j]) {
				continue
			}
			assert.NotEqual(t, ptr(shared[i]), ptr(shared[j]), "%#v and %#v share a map", values[i], values[j])
		}
	}
}

// Share never writes into a map or list it was given: the object it is
// given may already be in a store, read by renders (an informer's list is
// transformed twice), and its parts may be parts shared before.
func TestShareNeverModifiesItsInput(t *testing.T) {
	table := NewShareTable(0)
	first := table.Share(slice("a", "10.0.0.1"))
	in := slice("b", "10.0.0.2")
	before := runtime.DeepCopyJSON(in)
	eps := ptr(in["endpoints"])
	out := table.Share(in)
	require.Equal(t, before, in, "input unchanged")
	require.Equal(t, eps, ptr(in["endpoints"]))
	require.NotEqual(t, ptr(in), ptr(out), "a changed object is a copy")

	// Sharing what is shared already changes nothing and writes nothing.
	again := table.Share(first)
	require.Equal(t, ptr(first), ptr(again))

	// Concurrent readers of shared objects while more are shared: the race
	// detector sees any write into a shared map.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					_ = fmt.Sprint(first, out)
				}
			}
		})
	}
	for i := range 200 {
		table.Share(slice(fmt.Sprintf("c%d", i), "10.0.0.1"))
		table.Share(first)
		table.Share(out)
	}
	close(stop)
	wg.Wait()
}

func TestShareIsBounded(t *testing.T) {
	table := NewShareTable(8)
	for i := range 100 {
		table.Share(slice(fmt.Sprintf("s%d", i), fmt.Sprintf("10.0.%d.1", i)))
	}
	assert.LessOrEqual(t, table.Len(), 8, "the table forgets the least recently used parts")

	// A part larger than maxShareKeyBytes is not remembered; its parts are.
	big := func() map[string]any {
		return map[string]any{"kind": "X", "data": map[string]any{"k": strings.Repeat("x", maxShareKeyBytes), "small": map[string]any{"a": "b"}}}
	}
	table = NewShareTable(0)
	x, y := table.Share(big()), table.Share(big())
	assert.NotEqual(t, ptr(x["data"]), ptr(y["data"]))
	assert.Equal(t, ptr(x["data"].(map[string]any)["small"]), ptr(y["data"].(map[string]any)["small"]))
	assert.Equal(t, 1, table.Len())
}

func TestShareOfNothing(t *testing.T) {
	var table *ShareTable
	obj := slice("a", "1")
	assert.Equal(t, ptr(obj), ptr(table.Share(obj)), "a nil table shares nothing")
	assert.Nil(t, NewShareTable(0).Share(nil))
	// A value that is no JSON value is kept as it is, and what holds it
	// is not shared.
	type odd struct{ A int }
	tb := NewShareTable(0)
	o1 := tb.Share(map[string]any{"x": map[string]any{"v": odd{1}}})
	o2 := tb.Share(map[string]any{"x": map[string]any{"v": odd{1}}})
	assert.NotEqual(t, ptr(o1["x"]), ptr(o2["x"]))
}

func TestSharingTransform(t *testing.T) {
	objectOf := func(v any) map[string]any { return v.(*unstructured.Unstructured).Object }
	for _, keep := range []*Keep{NewKeep([][]string{{"endpoints"}, {"ports"}}, nil), nil} {
		transform := keep.SharingTransform(NewShareTable(0))
		withFields := slice("a", "10.0.0.1")
		withFields["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "kubectl"}}
		a, err := transform(&unstructured.Unstructured{Object: withFields})
		require.NoError(t, err)
		b, err := transform(&unstructured.Unstructured{Object: slice("b", "10.0.0.2")})
		require.NoError(t, err)
		ao, bo := objectOf(a), objectOf(b)
		assert.NotContains(t, ao["metadata"], "managedFields", "trimmed")
		assert.Equal(t, ptr(ao["ports"]), ptr(bo["ports"]), "keep %s", keep)

		// The informer's own transform of a listed object, already
		// transformed and shared, while renders read it: nothing is
		// written (the race detector would see it) and nothing changes.
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 100 {
				_ = fmt.Sprint(ao, bo)
			}
		})
		for range 100 {
			again, err := transform(&unstructured.Unstructured{Object: ao})
			require.NoError(t, err)
			if keep == nil {
				assert.Equal(t, ptr(ao), ptr(objectOf(again)), "nothing to prune: the same object")
			}
			assert.Equal(t, ptr(ao["ports"]), ptr(objectOf(again)["ports"]))
		}
		wg.Wait()
	}
}

// Forget drops what the table remembers, not what objects hold: an
// object shared before keeps its parts, and the next identical part is a
// new copy, remembered from then on.
func TestForgetDropsTheRememberedPartsOnly(t *testing.T) {
	table := NewShareTable(0)
	a := table.Share(slice("a", "10.0.0.1"))
	require.NotZero(t, table.Len())
	table.Forget()
	assert.Zero(t, table.Len())
	assert.Equal(t, slice("a", "10.0.0.1"), a, "a keeps its content")
	b := table.Share(slice("b", "10.0.0.2"))
	assert.NotEqual(t, ptr(a["ports"]), ptr(b["ports"]), "a new copy")
	c := table.Share(slice("c", "10.0.0.3"))
	assert.Equal(t, ptr(b["ports"]), ptr(c["ports"]), "remembered from then on")
	var none *ShareTable
	none.Forget()
}
