package resourcestatus

import (
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
