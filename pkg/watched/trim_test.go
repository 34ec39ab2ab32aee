package watched

import (
	"testing"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTrim(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "Ingress", "metadata": map[string]any{
		"name":          "web",
		"managedFields": []any{map[string]any{"manager": "kubectl"}},
		"annotations":   map[string]any{LastAppliedAnnotation: "{...}", "team": "a"},
	}}}
	got, err := Trim(u)
	assert.NoError(t, err)
	assert.Same(t, u, got)
	assert.Equal(t, map[string]any{"name": "web", "annotations": map[string]any{"team": "a"}}, u.Object["metadata"])

	only := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": map[string]any{LastAppliedAnnotation: "x"}}}}
	_, _ = Trim(only)
	assert.Equal(t, map[string]any{}, only.Object["metadata"], "an emptied annotations map goes too")

	for _, v := range []any{nil, "x", &unstructured.Unstructured{}, &unstructured.Unstructured{Object: map[string]any{"metadata": "odd"}}} {
		got, err := Trim(v)
		assert.NoError(t, err)
		assert.Equal(t, v, got)
	}
}

// A proposed change is stored as informers store objects: trimmed, on a
// copy (the request's object is left as it came).
func TestStoreChangesTrim(t *testing.T) {
	m := testModel(t)
	obj := object("networking.k8s.io/v1", "Ingress", "web", nil)
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
	got, err := m.StoreChanges(Change{Resource: ingressesGVR, Operation: store.Create, Object: obj})
	assert.NoError(t, err)
	assert.Empty(t, got["ingresses"].Object.GetManagedFields())
	assert.NotEmpty(t, obj.GetManagedFields(), "the request's object is untouched")
}
