package resourcestatus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

func testStores(t *testing.T) (store.Set, map[string]string) {
	t.Helper()
	ing, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	require.NoError(t, ing.Add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"namespace": "default", "name": "web", "resourceVersion": "7"}}}))
	byClass, err := store.New([]string{"spec.ingressClassName"})
	require.NoError(t, err)
	return store.Set{"ingresses": ing, "by-class": byClass}, map[string]string{"ingresses": "networking.k8s.io/v1", "by-class": "networking.k8s.io/v1", "services": "v1"}
}

func TestResolveFindsTheStoreOfEachObject(t *testing.T) {
	stores, versions := testStores(t)
	docs, err := Parse("{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web}, status: {}}")
	require.NoError(t, err)
	require.NoError(t, Resolve(docs, stores, versions))
	assert.Equal(t, "ingresses", docs[0].Store, "the store that holds it, not the first with its apiVersion")
	assert.Equal(t, "7", docs[0].ResourceVersion, "the resourceVersion of the object the render read: the write's precondition")
}

func TestResolveRefusesObjectsNotWatched(t *testing.T) {
	stores, versions := testStores(t)
	const web = "{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web}, status: {}}\n---\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"an object not in the state", "{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: gone}, status: {}}",
			"resourceStatus document 1 (line 1, Ingress default/gone): the object is not in the watched resources with writeStatus: true"},
		{"another kind of the same name", "{apiVersion: networking.k8s.io/v1, kind: IngressClass, metadata: {namespace: default, name: web}, status: {}}",
			"resourceStatus document 1 (line 1, IngressClass default/web): the object is not in the watched resources with writeStatus: true"},
		{"the object in another namespace", "{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}, status: {}}",
			"resourceStatus document 1 (line 1, Ingress web): the object is not in the watched resources with writeStatus: true"},
		{"an apiVersion nothing watches", "{apiVersion: networking.k8s.io/v1beta1, kind: Ingress, metadata: {namespace: default, name: web}, status: {}}",
			"resourceStatus document 1 (line 1, Ingress default/web): no watched resource with writeStatus: true has apiVersion networking.k8s.io/v1beta1"},
		{"a watched resource without a store", "{apiVersion: v1, kind: Service, metadata: {namespace: default, name: web}, status: {}}",
			"resourceStatus document 1 (line 1, Service default/web): no watched resource with writeStatus: true has apiVersion v1"},
		{"a malformed apiVersion", "{apiVersion: a/b/c, kind: Ingress, metadata: {namespace: default, name: web}, status: {}}",
			`resourceStatus document 1 (line 1, Ingress default/web): apiVersion "a/b/c": unexpected GroupVersion string: a/b/c`},
		{"two documents for one object", web + web,
			"resourceStatus document 2 (line 3, Ingress default/web): a second document for the object (the first is document 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse(tc.text)
			require.NoError(t, err)
			err = Resolve(docs, stores, versions)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// FuzzResolveIsResolveByID: Resolve, which tells a second document for
// one object by the object it finds, answers as resolveByID, which tells
// it by the object's identity (group, kind, namespace, name), over random
// documents: objects present or not, of the store's kind or another,
// named twice, of an apiVersion nothing watches or of two apiVersions of
// one group whose stores hold the same object.
func FuzzResolveIsResolveByID(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 5))
		stores, apiVersions := store.Set{}, map[string]string{}
		shared := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "g/v1", "kind": "K", "metadata": map[string]any{"namespace": "a", "name": "s", "resourceVersion": "9"}}}
		for _, w := range []struct{ key, apiVersion string }{{"k1", "g/v1"}, {"k2", "g/v1"}, {"k3", "g/v2"}, {"k4", "h/v1"}} {
			if r.IntN(4) == 0 {
				continue // not watched
			}
			s, err := store.New([]string{"metadata.namespace", "metadata.name"})
			require.NoError(t, err)
			for i := range 4 - r.IntN(2) {
				kind := []string{"K", "K", "K", "L"}[r.IntN(4)]
				obj := map[string]any{"apiVersion": w.apiVersion, "kind": kind, "metadata": map[string]any{"namespace": "a", "name": fmt.Sprintf("o%d", i), "resourceVersion": fmt.Sprint(i)}}
				require.NoError(t, s.Add(&unstructured.Unstructured{Object: obj}))
			}
			if r.IntN(2) == 0 {
				require.NoError(t, s.Add(shared)) // one object in several stores
			}
			stores[w.key], apiVersions[w.key] = s, w.apiVersion
		}
		var docs []Document
		for i := range 1 + r.IntN(8) {
			name := fmt.Sprintf("o%d", r.IntN(4))
			if r.IntN(2) == 0 {
				name = "s" // the object several stores hold
			}
			// Mostly documents that resolve, so that a second one for an
			// object is reached.
			apiVersion := []string{"g/v1", "g/v1", "g/v1", "g/v2", "g/v2", "h/v1"}[r.IntN(6)]
			if r.IntN(12) == 0 {
				apiVersion = []string{"x/v1", "a/b/c"}[r.IntN(2)]
			}
			kind := "K"
			if r.IntN(8) == 0 {
				kind = "L"
			}
			docs = append(docs, Document{APIVersion: apiVersion, Kind: kind, Namespace: "a", Name: name, Index: i + 1, Line: 2*i + 1})
		}
		want := slices.Clone(docs)
		wantErr := resolveByID(want, stores, apiVersions, nil)
		got := slices.Clone(docs)
		gotErr := Resolve(got, stores, apiVersions)
		require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "docs %+v", docs)
		if wantErr == nil {
			require.Equal(t, want, got)
		}
	})
}
