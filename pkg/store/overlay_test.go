package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// overlayBase is indexed by namespace and class: ns1/a(x) ns1/b(y) ns2/c(x).
func overlayBase(t testing.TB) *Store {
	return mustStore(t, byClass, ingress("ns1", "a", "x"), ingress("ns1", "b", "y"), ingress("ns2", "c", "x"))
}

func TestOverlayOperations(t *testing.T) {
	tests := []struct {
		name   string
		change Change
		list   []string
		gets   map[[2]string]string // keys -> want "ns/name" or ""
		fetch  map[string][]string  // namespace -> want
	}{
		{
			name:   "create",
			change: Change{Operation: Create, Object: ingress("ns1", "d", "x")},
			list:   []string{"ns1/a", "ns1/d", "ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "x"}: "ns1/a", {"ns1", "y"}: "ns1/b"},
			fetch:  map[string][]string{"ns1": {"ns1/a", "ns1/d", "ns1/b"}, "ns2": {"ns2/c"}},
		},
		{
			name:   "create sorting first at a shared key",
			change: Change{Operation: Create, Object: ingress("ns1", "0", "x")},
			list:   []string{"ns1/0", "ns1/a", "ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "x"}: "ns1/0"},
		},
		{
			name:   "create in a new namespace",
			change: Change{Operation: Create, Object: ingress("ns3", "e", "x")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c", "ns3/e"},
			gets:   map[[2]string]string{{"ns3", "x"}: "ns3/e"},
			fetch:  map[string][]string{"ns3": {"ns3/e"}, "ns1": {"ns1/a", "ns1/b"}},
		},
		{
			name:   "create of an existing name replaces it",
			change: Change{Operation: Create, Object: ingress("ns1", "a", "z")},
			list:   []string{"ns1/b", "ns1/a", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "x"}: "", {"ns1", "z"}: "ns1/a"},
		},
		{
			name:   "update with changed keys moves the object",
			change: Change{Operation: Update, Object: ingress("ns1", "a", "y"), OldObject: ingress("ns1", "a", "x")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "x"}: "", {"ns1", "y"}: "ns1/a", {"ns2", "x"}: "ns2/c"},
			fetch:  map[string][]string{"ns1": {"ns1/a", "ns1/b"}},
		},
		{
			name:   "update moving before others",
			change: Change{Operation: Update, Object: ingress("ns1", "b", "w")},
			list:   []string{"ns1/b", "ns1/a", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "y"}: "", {"ns1", "w"}: "ns1/b"},
		},
		{
			name:   "update moving to another namespace key (cluster view)",
			change: Change{Operation: Update, Object: ingress("ns2", "c", "a")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns2", "x"}: "", {"ns2", "a"}: "ns2/c"},
		},
		{
			name:   "update with unchanged keys",
			change: Change{Operation: Update, Object: ingress("ns1", "b", "y")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "y"}: "ns1/b"},
		},
		{
			name:   "update of an object the base lacks adds it",
			change: Change{Operation: Update, Object: ingress("ns2", "new", "x")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c", "ns2/new"},
		},
		{
			name:   "delete by object",
			change: Change{Operation: Delete, Object: ingress("ns1", "a", "x")},
			list:   []string{"ns1/b", "ns2/c"},
			gets:   map[[2]string]string{{"ns1", "x"}: "", {"ns1", "y"}: "ns1/b"},
			fetch:  map[string][]string{"ns1": {"ns1/b"}},
		},
		{
			name:   "delete by old object, whatever its stale keys",
			change: Change{Operation: Delete, OldObject: ingress("ns2", "c", "stale")},
			list:   []string{"ns1/a", "ns1/b"},
			fetch:  map[string][]string{"ns2": nil},
		},
		{
			name:   "delete of an absent object changes nothing",
			change: Change{Operation: Delete, OldObject: ingress("ns9", "zz", "x")},
			list:   []string{"ns1/a", "ns1/b", "ns2/c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := overlayBase(t)
			o, err := NewOverlay(base, tt.change)
			require.NoError(t, err)
			assert.Equal(t, tt.list, names(o.List()))
			assert.Equal(t, len(tt.list), o.Len())
			for keys, want := range tt.gets {
				assert.Equal(t, want, nameOf(o.Get(keys[0], keys[1])), "Get(%q)", keys)
			}
			for ns, want := range tt.fetch {
				assert.Equal(t, want, namesOrNil(o.Fetch(ns)), "Fetch(%q)", ns)
			}
			assert.Equal(t, byClass, o.IndexBy())
			checkConsistent(t, base.index, o)
			assert.Equal(t, []string{"ns1/a", "ns1/b", "ns2/c"}, names(base.List()), "base unchanged")
		})
	}
}

func namesOrNil(objs []*unstructured.Unstructured) []string {
	if len(objs) == 0 {
		return nil
	}
	return names(objs)
}

func TestOverlayErrors(t *testing.T) {
	base := overlayBase(t)
	tests := []struct {
		name   string
		change Change
		want   string
	}{
		{"create without object", Change{Operation: Create}, "CREATE without an object"},
		{"update without object", Change{Operation: Update, OldObject: ingress("ns1", "a", "x")}, "UPDATE without an object"},
		{"delete without objects", Change{Operation: Delete}, "DELETE without an object or old object"},
		{"unknown operation", Change{Operation: "PATCH", Object: ingress("ns1", "a", "x")}, `unknown operation "PATCH"`},
		{"empty operation", Change{Object: ingress("ns1", "a", "x")}, `unknown operation ""`},
		{"unindexable object", Change{Operation: Create, Object: newObj("Ingress", "ns1", "bad", map[string]any{"spec": map[string]any{"ingressClassName": map[string]any{}}})},
			`Ingress ns1/bad: indexBy[1] "spec.ingressClassName": value is a map`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewOverlay(base, tt.change)
			require.Error(t, err)
			assert.Nil(t, o)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := NewOverlay(nil, Change{Operation: Delete, Object: ingress("a", "b", "")})
	assert.Error(t, err)
}

func TestOverlayUnchangedReturnsBaseSnapshot(t *testing.T) {
	base := overlayBase(t)
	o, err := NewOverlay(base, Change{Operation: Delete, Object: ingress("nope", "nope", "")})
	require.NoError(t, err)
	b, l := base.List(), o.List()
	assert.Same(t, &b[0], &l[0], "no copy when the change does not touch the base")
	bf, of := base.Fetch("ns1", "x"), o.Fetch("ns1", "x")
	assert.Same(t, &bf[0], &of[0])
}

func TestOverlaySeesBaseAtReadTime(t *testing.T) {
	base := overlayBase(t)
	o, err := NewOverlay(base, Change{Operation: Update, Object: ingress("ns1", "a", "y")})
	require.NoError(t, err)
	first := o.List()
	assert.Same(t, &first[0], &o.List()[0], "List is cached while the base is unchanged")

	require.NoError(t, base.Add(ingress("ns0", "early", "x")))
	base.DeleteByName("ns2", "c")
	require.NoError(t, base.Add(ingress("ns1", "a", "q"))) // the base moves the object too
	assert.Equal(t, []string{"ns0/early", "ns1/a", "ns1/b"}, names(o.List()))
	assert.Equal(t, 3, o.Len())
	assert.Equal(t, "", nameOf(o.Get("ns1", "q")), "the base's version stays hidden")
	assert.Equal(t, []string{"ns1/a", "ns1/b", "ns2/c"}, names(first), "earlier result unchanged")
	checkConsistent(t, base.index, o)
}

func TestOverlaySharedKeys(t *testing.T) {
	base := mustStore(t, []string{"metadata.namespace", serviceNameLabel},
		endpointSlice("d", "api-b", "api"), endpointSlice("d", "api-c", "api"), endpointSlice("d", "web-1", "web"))

	tests := []struct {
		name   string
		change Change
		get    string
		fetch  []string
	}{
		{"create first", Change{Operation: Create, Object: endpointSlice("d", "api-a", "api")}, "d/api-a", []string{"d/api-a", "d/api-b", "d/api-c"}},
		{"create last", Change{Operation: Create, Object: endpointSlice("d", "api-z", "api")}, "d/api-b", []string{"d/api-b", "d/api-c", "d/api-z"}},
		{"delete first", Change{Operation: Delete, Object: endpointSlice("d", "api-b", "api")}, "d/api-c", []string{"d/api-c"}},
		{"move first away", Change{Operation: Update, Object: endpointSlice("d", "api-b", "web")}, "d/api-c", []string{"d/api-c"}},
		{"move in", Change{Operation: Update, Object: endpointSlice("d", "web-1", "api")}, "d/api-b", []string{"d/api-b", "d/api-c", "d/web-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewOverlay(base, tt.change)
			require.NoError(t, err)
			assert.Equal(t, tt.get, nameOf(o.Get("d", "api")))
			assert.Equal(t, tt.fetch, names(o.Fetch("d", "api")))
			checkConsistent(t, base.index, o)
			base.Fetch("d", "api") // cache the bucket view: Get must agree either way
			assert.Equal(t, tt.get, nameOf(o.Get("d", "api")))
		})
	}
}

func TestOverlayWithoutIndex(t *testing.T) {
	base := mustStore(t, nil, ingress("b", "1", ""))
	o, err := NewOverlay(base, Change{Operation: Create, Object: ingress("a", "0", "")})
	require.NoError(t, err)
	assert.Equal(t, "a/0", nameOf(o.Get()))
	assert.Equal(t, []string{"a/0", "b/1"}, names(o.Fetch()))
	assert.Nil(t, o.Fetch("x"))
	assert.Equal(t, "", nameOf(o.Get("x")))
}

func TestOverlayDeltaNamesTheKeysItChanges(t *testing.T) {
	s := overlayBase(t)
	old, _ := s.ByName("ns1", "a")
	gen := s.Generation()
	for _, tt := range []struct {
		name   string
		change Change
		want   [][]string
	}{
		{"create", Change{Operation: Create, Object: ingress("ns1", "d", "z")}, [][]string{{"ns1", "z"}}},
		{"update moving keys", Change{Operation: Update, Object: ingress("ns1", "a", "z"), OldObject: old}, [][]string{{"ns1", "z"}, {"ns1", "x"}}},
		{"delete", Change{Operation: Delete, Object: old}, [][]string{{"ns1", "x"}}},
		{"delete of nothing", Change{Operation: Delete, Object: ingress("ns1", "zz", "x")}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewOverlay(s, tt.change)
			require.NoError(t, err)
			keys, ok := o.Delta(s, gen)
			require.True(t, ok)
			assert.Equal(t, tt.want, keys)
			_, ok = o.Delta(s, gen+1)
			assert.False(t, ok, "another generation of the base")
			_, ok = o.Delta(o, gen)
			assert.False(t, ok, "an overlay is compared with its base, not with itself")
			other := overlayBase(t)
			_, ok = o.Delta(other, other.Generation())
			assert.False(t, ok, "another store")
		})
	}
}

// TestReadersTellTheirDeltaFromTheStoreTheyRead: a Store answers as itself
// while at the generation it was at, and as no other reader; a Without is
// never trusted (what it hides has no keys here); every reader has its
// base's generation.
func TestReadersTellTheirDeltaFromTheStoreTheyRead(t *testing.T) {
	s := overlayBase(t)
	gen := s.Generation()
	keys, ok := s.Delta(s, gen)
	assert.True(t, ok)
	assert.Empty(t, keys)
	_, ok = s.Delta(s, gen+1)
	assert.False(t, ok, "another generation")
	_, ok = s.Delta(overlayBase(t), gen)
	assert.False(t, ok, "another store")
	w := NewWithout(s, Name{Namespace: "ns1", Name: "a"})
	_, ok = w.Delta(s, gen)
	assert.False(t, ok)
	assert.Equal(t, gen, w.Generation())
	var none *Store
	assert.Zero(t, none.Generation(), "a nil store reads nothing")
	_, ok = none.Delta(none, 0)
	assert.False(t, ok)
}
