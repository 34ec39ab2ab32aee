package resourcestatus

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// keptWorld is a random state for FuzzResolveKeptIsResolve: stores of
// three apiVersions (two of one group), objects of two kinds, one object
// in several stores.
func keptWorld(t *testing.T, r *rand.Rand) (map[string]*store.Store, map[string]string) {
	stores, apiVersions := map[string]*store.Store{}, map[string]string{}
	shared := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "g/v1", "kind": "K", "metadata": map[string]any{"namespace": "a", "name": "s", "resourceVersion": "9"}}}
	for _, w := range []struct{ key, apiVersion string }{{"k1", "g/v1"}, {"k2", "g/v1"}, {"k3", "g/v2"}, {"k4", "h/v1"}} {
		if r.IntN(5) == 0 {
			continue // not watched
		}
		s, err := store.New([]string{"metadata.namespace", "metadata.name"})
		require.NoError(t, err)
		for i := range 6 - r.IntN(2) {
			require.NoError(t, s.Add(keptObject(w.apiVersion, []string{"K", "K", "K", "L"}[r.IntN(4)], fmt.Sprintf("o%d", i), fmt.Sprint(i))))
		}
		if r.IntN(2) == 0 {
			require.NoError(t, s.Add(shared))
		}
		stores[w.key], apiVersions[w.key] = s, w.apiVersion
	}
	return stores, apiVersions
}

func keptObject(apiVersion, kind, name, rv string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"namespace": "a", "name": name, "resourceVersion": rv}}}
}

// keptText is a random resourceStatus text: documents that mostly
// resolve, some named twice, of another kind, an unknown apiVersion.
func keptText(r *rand.Rand, n int) string {
	var docs []string
	for range n {
		name := fmt.Sprintf("o%d", r.IntN(7))
		if r.IntN(6) == 0 {
			name = "s"
		}
		apiVersion := []string{"g/v1", "g/v1", "g/v1", "g/v1", "g/v2", "h/v1", "h/v1"}[r.IntN(7)]
		if r.IntN(20) == 0 {
			apiVersion = "x/v1"
		}
		kind := "K"
		if r.IntN(10) == 0 {
			kind = "L"
		}
		docs = append(docs, fmt.Sprintf("{apiVersion: %s, kind: %s, metadata: {namespace: a, name: %s}, status: {x: %d}}", apiVersion, kind, name, r.IntN(2)))
	}
	return strings.Join(docs, "\n---\n")
}

// firstText is a text that resolves: a document for most objects of the
// stores of g/v1 and h/v1, one per apiVersion and name, none for the
// object several stores hold.
func firstText(r *rand.Rand, base map[string]*store.Store) string {
	var docs []string
	seen := map[string]bool{}
	for _, key := range []string{"k1", "k2", "k4"} {
		s := base[key]
		if s == nil {
			continue
		}
		for _, o := range s.List() {
			apiVersion, _ := o.Object["apiVersion"].(string)
			kind, _ := o.Object["kind"].(string)
			if o.GetName() == "s" || seen[apiVersion+" "+o.GetName()] || r.IntN(4) == 0 {
				continue
			}
			seen[apiVersion+" "+o.GetName()] = true
			docs = append(docs, fmt.Sprintf("{apiVersion: %s, kind: %s, metadata: {namespace: a, name: %s}, status: {x: %d}}", apiVersion, kind, o.GetName(), r.IntN(2)))
		}
	}
	return strings.Join(docs, "\n---\n")
}

// FuzzResolveKeptIsResolve: ResolveKept, taking what a Keep of an earlier
// text over earlier stores found, answers as Resolve: for texts that share
// documents with it, over the same stores, over an Overlay of one of them
// (a CREATE, UPDATE or DELETE of a name the documents use or not), over a
// Without, over a store written since, and over other stores.
func FuzzResolveKeptIsResolve(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 11))
		base, apiVersions := keptWorld(t, r)
		parts := watched.NewShareTable(0)
		// The recording render: its documents over the stores themselves.
		live := store.Set{}
		for k, s := range base {
			live[k] = s
		}
		first := firstText(r, base)
		if first == "" {
			return
		}
		docs, from, cache, order, err := ParseDecodings(first, nil, nil, parts, true)
		require.NoError(t, err)
		k, err := Keep(docs, from, live, apiVersions)
		if err != nil || k == nil {
			return
		}
		for range 4 {
			// Another text: most documents of the first, in another
			// order, sometimes one twice, sometimes a new one.
			var pieces []string
			old := strings.Split(first, "\n---\n")
			for _, p := range old {
				if r.IntN(5) > 0 {
					pieces = append(pieces, p)
				}
			}
			if r.IntN(8) == 0 {
				pieces = append(pieces, old[r.IntN(len(old))])
			}
			if r.IntN(2) == 0 {
				pieces = append(pieces, keptText(r, 1))
			}
			r.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
			if len(pieces) == 0 {
				continue
			}
			text := strings.Join(pieces, "\n---\n")
			stores := keptStores(t, r, base, live)
			docs, from, _, _, err := ParseDecodings(text, cache, order, parts, false)
			require.NoError(t, err)
			want := slices.Clone(docs)
			wantErr := Resolve(want, stores, apiVersions)
			got := slices.Clone(docs)
			gotErr := ResolveKept(got, from, stores, apiVersions, k)
			require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "text %q", text)
			if wantErr == nil {
				require.Equal(t, want, got)
			}
		}
	})
}

// keptStores returns the stores of a later render: live, or live with an
// Overlay or a Without on one store, or with one store written.
func keptStores(t *testing.T, r *rand.Rand, base map[string]*store.Store, live store.Set) store.Set {
	keys := slices.Sorted(maps.Keys(base))
	out := store.Set{}
	for k, v := range live {
		out[k] = v
	}
	if len(keys) == 0 {
		return out
	}
	key := keys[r.IntN(len(keys))]
	name := []string{"o1", "o2", "o3", "o9", "s"}[r.IntN(5)]
	apiVersion, _ := base[key].List()[0].Object["apiVersion"].(string)
	switch r.IntN(6) {
	case 0: // the same stores
	case 1, 2:
		op := []store.Operation{store.Create, store.Update, store.Delete}[r.IntN(3)]
		o, err := store.NewOverlay(base[key], store.Change{Operation: op, Object: keptObject(apiVersion, []string{"K", "L"}[r.IntN(2)], name, "new")})
		require.NoError(t, err)
		out[key] = o
	case 3:
		out[key] = store.NewWithout(base[key], store.Name{Namespace: "a", Name: name})
	case 4:
		// Written since: the store itself moves to another generation
		// (so does every later render's).
		require.NoError(t, base[key].Add(keptObject(apiVersion, []string{"K", "L"}[r.IntN(2)], name, "w")))
	case 5:
		delete(out, key) // no longer watched
	}
	return out
}

// TestResolveKeptTakesWhatWasFound: over an Overlay that adds one object,
// the other documents take what Keep found (no store is read for them: a
// Store that would answer otherwise is not asked), and the new document is
// resolved anew.
func TestResolveKeptTakesWhatWasFound(t *testing.T) {
	s, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	require.NoError(t, s.Add(keptObject("g/v1", "K", "o1", "1")))
	apiVersions := map[string]string{"k": "g/v1"}
	const doc = "{apiVersion: g/v1, kind: K, metadata: {namespace: a, name: %s}, status: {}}"
	parts := watched.NewShareTable(0)
	docs, from, cache, order, err := ParseDecodings(fmt.Sprintf(doc, "o1")+"\n---\n", nil, nil, parts, true)
	require.NoError(t, err)
	k, err := Keep(docs, from, store.Set{"k": s}, apiVersions)
	require.NoError(t, err)
	require.NotNil(t, k)

	o, err := store.NewOverlay(s, store.Change{Operation: store.Create, Object: keptObject("g/v1", "K", "o2", "2")})
	require.NoError(t, err)
	docs, from, _, _, err = ParseDecodings(fmt.Sprintf(doc, "o1")+"\n---\n"+fmt.Sprintf(doc, "o2"), cache, order, parts, false)
	require.NoError(t, err)
	counted := &countingReader{Overlay: o}
	require.NoError(t, ResolveKept(docs, from, store.Set{"k": counted}, apiVersions, k))
	assert.Equal(t, []string{"1", "2"}, []string{docs[0].ResourceVersion, docs[1].ResourceVersion})
	assert.Equal(t, 1, counted.byName, "only the new document's object is looked up")
	want := slices.Clone(docs)
	require.NoError(t, Resolve(want, store.Set{"k": o}, apiVersions))
	assert.Equal(t, want, docs)
}

// countingReader counts ByName calls.
type countingReader struct {
	*store.Overlay
	byName int
}

func (c *countingReader) ByName(namespace, name string) (*unstructured.Unstructured, bool) {
	c.byName++
	return c.Overlay.ByName(namespace, name)
}
