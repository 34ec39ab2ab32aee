package store

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var byClass = []string{"metadata.namespace", "spec.ingressClassName"}

func TestNewRejectsBadIndex(t *testing.T) {
	_, err := New([]string{"metadata.name", "spec["})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `indexBy[1] "spec["`)
}

func TestStoreAddGetFetch(t *testing.T) {
	s := mustStore(t, byClass,
		ingress("b", "z", "x"), ingress("a", "y", "x"), ingress("a", "w", "y"), ingress("a", "v", "x"), ingress("c", "u", ""))

	assert.Equal(t, 5, s.Len())
	assert.Equal(t, []string{"a/v", "a/y", "a/w", "b/z", "c/u"}, names(s.List()))
	assert.Equal(t, "a/v", nameOf(s.Get("a", "x")), "first of a shared key, by name")
	assert.Equal(t, "a/w", nameOf(s.Get("a", "y")))
	assert.Equal(t, "c/u", nameOf(s.Get("c", "")), "missing field is key \"\"")
	assert.Equal(t, "", nameOf(s.Get("a", "nope")))
	assert.Equal(t, "", nameOf(s.Get("a")), "Get needs every key")
	assert.Equal(t, "", nameOf(s.Get("a", "x", "extra")))
	assert.Equal(t, []string{"a/v", "a/y", "a/w"}, names(s.Fetch("a")))
	assert.Equal(t, []string{"a/v", "a/y"}, names(s.Fetch("a", "x")))
	assert.Empty(t, s.Fetch("zz"))
	assert.Nil(t, s.Fetch("a", "x", "extra"))
	assert.Equal(t, names(s.List()), names(s.Fetch()))
	assert.Equal(t, byClass, s.IndexBy())

	o, ok := s.ByName("a", "y")
	require.True(t, ok)
	assert.Equal(t, "y", o.GetName())
	_, ok = s.ByName("a", "nope")
	assert.False(t, ok)

	keys, err := s.Keys(ingress("q", "r", "cls"))
	require.NoError(t, err)
	assert.Equal(t, []string{"q", "cls"}, keys)
	checkConsistent(t, s.index, s)
}

func TestStoreUpdateMovesKeys(t *testing.T) {
	s := mustStore(t, byClass, ingress("a", "one", "x"), ingress("a", "two", "x"))
	require.NoError(t, s.Update(ingress("a", "one", "y")))

	assert.Equal(t, 2, s.Len())
	assert.Equal(t, []string{"a/two"}, names(s.Fetch("a", "x")))
	assert.Equal(t, []string{"a/one"}, names(s.Fetch("a", "y")))
	assert.Equal(t, []string{"a/two", "a/one"}, names(s.List()))
	assert.Equal(t, "a/two", nameOf(s.Get("a", "x")))
	checkConsistent(t, s.index, s)

	// Add is an upsert too, and moving the last member removes the bucket.
	require.NoError(t, s.Add(ingress("a", "two", "y")))
	assert.Empty(t, s.Fetch("a", "x"))
	assert.Empty(t, s.levels[1][joinKeys([]string{"a", "x"})], "empty bucket is dropped")
	assert.Equal(t, []string{"a/one", "a/two"}, names(s.Fetch("a")))
	checkConsistent(t, s.index, s)
}

func TestStoreDelete(t *testing.T) {
	s := mustStore(t, byClass, ingress("a", "one", "x"), ingress("a", "two", "x"), ingress("b", "three", "x"))

	require.NoError(t, s.Delete(ingress("a", "one", "ignored-keys")))
	assert.Equal(t, []string{"a/two", "b/three"}, names(s.List()))
	s.DeleteByName("b", "three")
	s.DeleteByName("b", "absent")
	assert.Equal(t, []string{"a/two"}, names(s.List()))
	assert.Empty(t, s.Fetch("b"))
	assert.Equal(t, 1, s.Len())
	checkConsistent(t, s.index, s)

	assert.Error(t, s.Delete(nil))
	assert.Error(t, s.Add(nil))
}

func TestStoreAddErrorLeavesStoreUnchanged(t *testing.T) {
	s := mustStore(t, []string{"metadata.namespace", "spec"}, newObj("Thing", "a", "b", map[string]any{"spec": "ok"}))
	err := s.Add(newObj("Thing", "a", "b", map[string]any{"spec": map[string]any{"x": "y"}}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Thing a/b: indexBy[1] "spec": value is a map`)
	o, _ := s.Get("a", "ok")
	assert.Equal(t, "ok", o.Object["spec"])
}

func TestStoreReplace(t *testing.T) {
	s := mustStore(t, byClass, ingress("a", "old", "x"), ingress("a", "kept", "x"))
	before := s.List()

	err := s.Replace([]*unstructured.Unstructured{ingress("z", "z", "z"), {Object: map[string]any{"metadata": map[string]any{"name": "n"}, "spec": map[string]any{"ingressClassName": []any{}}}}})
	require.Error(t, err, "a bad object fails the whole replace")
	assert.Equal(t, names(before), names(s.List()))
	require.Error(t, s.Replace([]*unstructured.Unstructured{nil}))

	require.NoError(t, s.Replace([]*unstructured.Unstructured{
		ingress("b", "new", "x"), ingress("a", "kept", "y"), ingress("a", "dup", "x"), ingress("a", "dup", "w"),
	}))
	assert.Equal(t, []string{"a/dup", "a/kept", "b/new"}, names(s.List()))
	assert.Equal(t, "a/dup", nameOf(s.Get("a", "w")), "last duplicate wins")
	assert.Empty(t, s.Fetch("a", "x"))
	_, ok := s.ByName("a", "old")
	assert.False(t, ok)
	assert.Equal(t, []string{"a/kept", "a/old"}, names(before), "earlier snapshots are untouched")
	checkConsistent(t, s.index, s)

	require.NoError(t, s.Replace(nil))
	assert.Equal(t, 0, s.Len())
	assert.Empty(t, s.List())
}

func TestStoreListIsDeterministic(t *testing.T) {
	var objs []*unstructured.Unstructured
	for _, ns := range []string{"b", "a", "c"} {
		for _, name := range []string{"n3", "n1", "n2"} {
			for _, class := range []string{"y", "x"} {
				objs = append(objs, ingress(ns, name+class, class))
			}
		}
	}
	want := names(mustStore(t, byClass, objs...).List())
	require.Len(t, want, 18)
	assert.Equal(t, []string{"a/n1x", "a/n2x", "a/n3x", "a/n1y"}, want[:4], "by keys, then name")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
		s := mustStore(t, byClass, objs...)
		assert.Equal(t, want, names(s.List()))
		r, _ := New(byClass)
		require.NoError(t, r.Replace(objs))
		assert.Equal(t, want, names(r.List()))
	}
}

func TestStoreSharedKeys(t *testing.T) {
	s := mustStore(t, []string{"metadata.namespace", serviceNameLabel},
		endpointSlice("default", "api-c", "api"), endpointSlice("default", "api-a", "api"),
		endpointSlice("default", "web-1", "web"), endpointSlice("default", "api-b", "api"),
		endpointSlice("other", "api-0", "api"))

	assert.Equal(t, "default/api-a", nameOf(s.Get("default", "api")))
	assert.Equal(t, []string{"default/api-a", "default/api-b", "default/api-c"}, names(s.Fetch("default", "api")))
	// Get is the same before and after the bucket's sorted view is cached.
	assert.Equal(t, "default/api-a", nameOf(s.Get("default", "api")))
	assert.Equal(t, []string{"default/api-a", "default/api-b", "default/api-c", "default/web-1"}, names(s.Fetch("default")))

	s.DeleteByName("default", "api-a")
	assert.Equal(t, "default/api-b", nameOf(s.Get("default", "api")))
	checkConsistent(t, s.index, s)
}

func TestStoreCachesSnapshots(t *testing.T) {
	s := mustStore(t, byClass, ingress("a", "1", "x"), ingress("a", "2", "x"), ingress("b", "3", "y"))
	l1, l2 := s.List(), s.List()
	require.Len(t, l1, 3)
	assert.Same(t, &l1[0], &l2[0], "List is not rebuilt for an unchanged store")
	f1, f2 := s.Fetch("a"), s.Fetch("a")
	assert.Same(t, &f1[0], &f2[0], "Fetch is not rebuilt for an unchanged store")

	grown := append(l1, ingress("z", "z", "z"))
	assert.Len(t, grown, 4)
	assert.Equal(t, []string{"a/1", "a/2", "b/3"}, names(s.List()), "appending to a result does not touch the cache")

	require.NoError(t, s.Add(ingress("b", "4", "y")))
	l3 := s.List()
	assert.NotSame(t, &l1[0], &l3[0])
	assert.Equal(t, []string{"a/1", "a/2", "b/3"}, names(l1), "old snapshot unchanged by the write")
	f3 := s.Fetch("a")
	assert.Same(t, &f1[0], &f3[0], "a write elsewhere keeps other buckets' caches")

	gen := s.gen
	require.NoError(t, s.Add(l3[0]))
	assert.Equal(t, gen, s.gen, "re-adding the same object is a no-op")
}

func TestStoreWithoutIndex(t *testing.T) {
	s := mustStore(t, nil, ingress("b", "1", ""), ingress("a", "2", ""))
	assert.Equal(t, []string{"a/2", "b/1"}, names(s.List()))
	assert.Equal(t, "a/2", nameOf(s.Get()))
	assert.Nil(t, s.Fetch("x"))
	assert.Equal(t, "", nameOf(s.Get("x")))
	checkConsistent(t, s.index, s)
}

func TestStoreKeysWithSeparator(t *testing.T) {
	idx := []string{"spec.a", "spec.b"}
	mk := func(name, a, b string) *unstructured.Unstructured {
		return newObj("T", "", name, map[string]any{"spec": map[string]any{"a": a, "b": b}})
	}
	s := mustStore(t, idx, mk("one", "a\x00b", "c"), mk("two", "a", "b\x00c"))
	assert.Equal(t, "/one", nameOf(s.Get("a\x00b", "c")))
	assert.Equal(t, "/two", nameOf(s.Get("a", "b\x00c")))
	assert.Equal(t, []string{"/two"}, names(s.Fetch("a")))
	checkConsistent(t, s.index, s)
}
