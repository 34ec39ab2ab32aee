package watched

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// An informer transforms a listed object twice (the reflector's list, then
// the FIFO's Replace): the second time, an object holding nothing the Keep
// does not keep is left as it is, not copied again; one holding more, at
// any depth, is pruned.
func TestTransformLeavesAnAlreadyPrunedObjectAsItIs(t *testing.T) {
	keep := NewKeep([][]string{{"spec", "rules", "host"}, {"ports"}}, [][]string{{"metadata", "shape"}})
	obj := map[string]any{"apiVersion": "v1", "kind": "K",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "y"}},
		"spec":     map[string]any{"rules": []any{map[string]any{"host": "h", "http": map[string]any{}}}, "other": int64(1)},
		"ports":    []any{map[string]any{"port": int64(80), "extra": "kept: ports is kept whole"}}}
	for _, transform := range []func(any) (any, error){keep.Transform, keep.SharingTransform(NewShareTable(0))} {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
		first, err := transform(u)
		require.NoError(t, err)
		pruned := first.(*unstructured.Unstructured).Object
		assert.Equal(t, keep.Prune(obj), pruned)
		again, err := transform(&unstructured.Unstructured{Object: pruned})
		require.NoError(t, err)
		assert.Equal(t, ptr(pruned), ptr(again.(*unstructured.Unstructured).Object), "pruned before: the same object")
		assert.Equal(t, keep.Prune(obj), again.(*unstructured.Unstructured).Object)
	}
	for name, more := range map[string]func(m map[string]any){
		"at the root":   func(m map[string]any) { m["status"] = map[string]any{} },
		"in a kept map": func(m map[string]any) { m["metadata"].(map[string]any)["uid2"] = "u" },
		"in a list's map": func(m map[string]any) {
			m["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["x"] = int64(1)
		},
		"below a shape path": func(m map[string]any) { m["metadata"].(map[string]any)["shape"] = map[string]any{"x": "y"} },
	} {
		pruned := keep.Prune(obj)
		more(pruned)
		got, err := keep.Transform(&unstructured.Unstructured{Object: pruned})
		require.NoError(t, err)
		assert.NotEqual(t, ptr(pruned), ptr(got.(*unstructured.Unstructured).Object), name)
		assert.Equal(t, keep.Prune(pruned), got.(*unstructured.Unstructured).Object, name)
	}
}

// shareOwned replaces the parts of a copy nothing else holds in place: the
// maps and lists that hold a shared part are the object's own still (Share
// would copy each of them), and the parts are the table's.
func TestShareOwnedChangesAFreshCopyInPlace(t *testing.T) {
	table := NewShareTable(0)
	first := table.Share(slice("a", "10.0.0.1"))
	obj := slice("b", "10.0.0.2")
	root, endpoints := ptr(obj), ptr(obj["endpoints"])
	table.shareOwned(obj)
	assert.Equal(t, root, ptr(obj))
	assert.Equal(t, endpoints, ptr(obj["endpoints"]), "the list holding shared conditions is not copied")
	assert.Equal(t, ptr(first["ports"]), ptr(obj["ports"]))
	assert.Equal(t, ptr(first["endpoints"].([]any)[0].(map[string]any)["conditions"]),
		ptr(obj["endpoints"].([]any)[1].(map[string]any)["conditions"]))
	assert.Equal(t, slice("b", "10.0.0.2"), obj, "the same content")
}

// SharingTransform, pruning and sharing in place, gives every object the
// content Keep.Prune gives it (templates read the same values), for
// random objects, twice as informers transform a listed object, and
// never writes to the object it was given (but for Trim's removals).
func TestSharingTransformIsPrune(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 33))
	keeps := []*Keep{
		nil,
		NewKeep(nil, nil),
		NewKeep([][]string{{"a"}, {"b", "c"}}, [][]string{{"d", "e"}}),
		NewKeep([][]string{{"b"}, {"c", "a", "b"}, {"metadata", "labels"}}, nil),
	}
	for i := range 300 {
		obj := randomObject(rng, 4)
		for j, keep := range keeps {
			table := NewShareTable(8) // small: parts are forgotten too
			transform := keep.SharingTransform(table)
			for range 3 { // other objects, so that parts are shared
				_, err := transform(&unstructured.Unstructured{Object: randomObject(rng, 4)})
				require.NoError(t, err)
			}
			in := runtime.DeepCopyJSON(obj)
			given, parts := runtime.DeepCopyJSON(in), partsOf(in, "")
			got, err := transform(&unstructured.Unstructured{Object: in})
			require.NoError(t, err)
			out := got.(*unstructured.Unstructured).Object
			want := keep.Prune(obj)
			require.Equal(t, want, out, "object %d, keep %d", i, j)
			require.Equal(t, given, in, "object %d, keep %d: the input is not written to", i, j)
			require.Equal(t, parts, partsOf(in, ""), "object %d, keep %d: the input's parts are its own", i, j)
			again, err := transform(&unstructured.Unstructured{Object: out})
			require.NoError(t, err)
			require.Equal(t, want, again.(*unstructured.Unstructured).Object, "object %d, keep %d, twice", i, j)
		}
	}
}

// randomObject is a JSON object of small keys (so that keeps name them),
// scalars of every kind, nil and empty maps and lists, depth levels deep.
func randomObject(rng *rand.Rand, depth int) map[string]any {
	keys := []string{"a", "b", "c", "d", "e"}
	m := map[string]any{"apiVersion": "v1", "kind": "K", "metadata": map[string]any{"name": fmt.Sprint(rng.IntN(3))}}
	for range rng.IntN(5) {
		m[keys[rng.IntN(len(keys))]] = randomValue(rng, depth)
	}
	if rng.IntN(4) == 0 {
		m["metadata"].(map[string]any)["labels"] = map[string]any{"x": fmt.Sprint(rng.IntN(2))}
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(10); {
	case depth == 0 || k < 3:
		return []any{nil, true, false, "x", "y", int64(1), int64(2), 1.5, ""}[rng.IntN(9)]
	case k < 5:
		return []any{map[string]any(nil), map[string]any{}, []any(nil), []any{}}[rng.IntN(4)]
	case k < 8:
		return randomObject(rng, depth-1)
	default:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth-1)
		}
		return l
	}
}

// partsOf lists the address of every map and list in v by its path.
func partsOf(v any, path string) map[string]uintptr {
	out := map[string]uintptr{}
	switch x := v.(type) {
	case map[string]any:
		out[path] = ptr(x)
		for k, e := range x {
			maps.Copy(out, partsOf(e, path+"."+k))
		}
	case []any:
		out[path] = ptr(x)
		for i, e := range x {
			maps.Copy(out, partsOf(e, fmt.Sprintf("%s[%d]", path, i)))
		}
	}
	return out
}

// A pruned copy's strings, values and keys, are the table's: equal strings
// of two objects are one, and neither is the decoded object's, unless it
// is longer than maxWordBytes; an object holding nothing but what is kept
// is copied too, unless the table transformed it before.
func TestSharingTransformKeepsTheTablesStrings(t *testing.T) {
	long := strings.Repeat("x", maxWordBytes+1)
	object := func(i int) map[string]any { // unique maps: none is shared whole
		return map[string]any{"apiVersion": strings.Clone("v1"), "kind": "K",
			"metadata": map[string]any{"name": fmt.Sprint(i), "namespace": strings.Clone("ns")},
			"spec":     map[string]any{strings.Clone("key"): strings.Clone("value"), "long": strings.Clone(long), "i": int64(i)},
			"status":   map[string]any{}} // not kept: the object is pruned
	}
	keep := NewKeep([][]string{{"spec"}}, nil)
	transform := keep.SharingTransform(NewShareTable(0))
	var got []map[string]any
	var given []map[string]any
	for i := range 2 {
		in := object(i)
		if i == 1 {
			delete(in, "status") // holding only what is kept, but not transformed before
		}
		out, err := transform(&unstructured.Unstructured{Object: in})
		require.NoError(t, err)
		got, given = append(got, out.(*unstructured.Unstructured).Object), append(given, in)
	}
	data := func(v any) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(v.(string)))) }
	keyData := func(m map[string]any, key string) uintptr {
		for k := range m {
			if k == key {
				return uintptr(unsafe.Pointer(unsafe.StringData(k)))
			}
		}
		return 0
	}
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	meta := func(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
	assert.Equal(t, data(meta(got[0])["namespace"]), data(meta(got[1])["namespace"]))
	assert.NotEqual(t, data(meta(given[1])["namespace"]), data(meta(got[1])["namespace"]))
	assert.Equal(t, data(spec(got[0])["key"]), data(spec(got[1])["key"]), "below a path kept whole")
	assert.NotEqual(t, data(spec(given[0])["key"]), data(spec(got[0])["key"]))
	assert.Equal(t, keyData(spec(got[0]), "key"), keyData(spec(got[1]), "key"), "keys too")
	assert.NotEqual(t, keyData(spec(given[0]), "key"), keyData(spec(got[0]), "key"))
	assert.Equal(t, data(spec(given[0])["long"]), data(spec(got[0])["long"]), "a long string stays the object's")
	assert.Equal(t, keep.Prune(object(1)), got[1])
	assert.NotContains(t, got[1], "status")
}

// With a nil Keep (objects kept whole), SharingTransform copies an object
// once, taking the table's strings, and leaves the copy as it is when it
// transforms it again (the informer's second transform of a listed
// object); a table that forgot its strings copies again.
func TestSharingTransformCopiesAWholeObjectOnce(t *testing.T) {
	table := NewShareTable(0)
	transform := (*Keep)(nil).SharingTransform(table)
	in := slice("a", "10.0.0.1")
	out, err := transform(&unstructured.Unstructured{Object: in})
	require.NoError(t, err)
	first := out.(*unstructured.Unstructured).Object
	assert.Equal(t, slice("a", "10.0.0.1"), first)
	assert.NotEqual(t, ptr(in), ptr(first), "a copy")
	assert.NotEqual(t, ptr(in["metadata"]), ptr(first["metadata"]))
	again, err := transform(&unstructured.Unstructured{Object: first})
	require.NoError(t, err)
	assert.Equal(t, ptr(first), ptr(again.(*unstructured.Unstructured).Object), "copied before: the same object")
	table.Forget()
	third, err := transform(&unstructured.Unstructured{Object: first})
	require.NoError(t, err)
	assert.Equal(t, slice("a", "10.0.0.1"), third.(*unstructured.Unstructured).Object)
	assert.NotEqual(t, ptr(first), ptr(third.(*unstructured.Unstructured).Object), "forgotten: copied again")
}
