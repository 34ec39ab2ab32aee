package watched

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ingressObject is an Ingress as an API server returns it.
func ingressObject() map[string]any {
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7", "generation": int64(1),
			"creationTimestamp": "2026-01-01T00:00:00Z",
			"labels":            map[string]any{"app": "web"},
			"annotations":       map[string]any{"team": "a", "haproxy.org/timeout": "5s"},
			"managedFields":     []any{map[string]any{"manager": "kubectl"}},
		},
		"spec": map[string]any{
			"ingressClassName": "htc",
			"rules": []any{
				map[string]any{"host": "a.example.com", "http": map[string]any{"paths": []any{map[string]any{"path": "/"}}}},
				map[string]any{"http": map[string]any{}},
			},
		},
		"status": map[string]any{"loadBalancer": map[string]any{}},
	}
}

func TestKeepPrune(t *testing.T) {
	base := map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "7"}}
	with := func(edit func(m map[string]any)) map[string]any {
		m := runtime.DeepCopyJSON(base)
		edit(m)
		return m
	}
	for _, tc := range []struct {
		name  string
		paths [][]string
		want  map[string]any
	}{
		{"nothing read: identity only (not the uid)", nil, base},
		{"a field", [][]string{{"spec", "ingressClassName"}},
			with(func(m map[string]any) { m["spec"] = map[string]any{"ingressClassName": "htc"} })},
		{"list elements keep their place, each with the field read", [][]string{{"spec", "rules", "host"}},
			with(func(m map[string]any) {
				m["spec"] = map[string]any{"rules": []any{map[string]any{"host": "a.example.com"}, map[string]any{}}}
			})},
		{"a key holding dots is one step", [][]string{{"metadata", "annotations", "haproxy.org/timeout"}},
			with(func(m map[string]any) {
				m["metadata"].(map[string]any)["annotations"] = map[string]any{"haproxy.org/timeout": "5s"}
			})},
		{"an absent field stays absent", [][]string{{"spec", "tls", "secretName"}, {"spec", "defaultBackend"}},
			with(func(m map[string]any) { m["spec"] = map[string]any{} })},
		{"a field read whole keeps everything below", [][]string{{"metadata", "labels"}, {"status"}},
			with(func(m map[string]any) {
				m["metadata"].(map[string]any)["labels"] = map[string]any{"app": "web"}
				m["status"] = map[string]any{"loadBalancer": map[string]any{}}
			})},
		{"a scalar where fields below are read stays", [][]string{{"metadata", "name", "first"}}, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := ingressObject()
			before := runtime.DeepCopyJSON(obj)
			assert.Equal(t, tc.want, NewKeep(tc.paths, nil).Prune(obj))
			assert.Equal(t, before, obj, "Prune changed its input")
		})
	}
	t.Run("the empty path keeps everything", func(t *testing.T) {
		keep := NewKeep([][]string{{"spec", "rules"}, {}}, nil)
		assert.Nil(t, keep)
		obj := ingressObject()
		got := keep.Prune(obj)
		assert.Equal(t, obj, got)
		got["metadata"].(map[string]any)["name"] = "changed"
		assert.Equal(t, "web", obj["metadata"].(map[string]any)["name"], "the full copy shares a map with its input")
	})
}

func TestKeepTransform(t *testing.T) {
	u := &unstructured.Unstructured{Object: ingressObject()}
	u.Object["metadata"].(map[string]any)["annotations"].(map[string]any)[LastAppliedAnnotation] = "{}"
	got, err := NewKeep([][]string{{"metadata", "annotations"}}, nil).Transform(u)
	require.NoError(t, err)
	assert.Same(t, u, got)
	assert.Equal(t, map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "7",
		"annotations": map[string]any{"team": "a", "haproxy.org/timeout": "5s"}}, u.Object["metadata"],
		"managedFields, last-applied and unread fields are gone")

	all := &unstructured.Unstructured{Object: ingressObject()}
	_, err = (*Keep)(nil).Transform(all)
	require.NoError(t, err)
	assert.NotContains(t, all.Object["metadata"], "managedFields", "a nil Keep still trims")
	assert.Contains(t, all.Object, "status")

	for _, v := range []any{nil, "x", &unstructured.Unstructured{}} {
		got, err := NewKeep(nil, nil).Transform(v)
		assert.NoError(t, err)
		assert.Equal(t, v, got)
	}
}

func TestKeepCoversAndUnion(t *testing.T) {
	labels := NewKeep([][]string{{"metadata", "labels"}}, nil)
	app := NewKeep([][]string{{"metadata", "labels", "app"}}, nil)
	spec := NewKeep([][]string{{"spec"}}, nil)
	specShape := NewKeep(nil, [][]string{{"spec", "backend", "port"}})
	for _, tc := range []struct {
		name     string
		k, other *Keep
		want     bool
	}{
		{"a map covers a key of it", labels, app, true},
		{"a key does not cover its map", app, labels, false},
		{"itself", app, app, true},
		{"a sibling", spec, app, false},
		{"everything covers all", nil, spec, true},
		{"nothing covers everything", spec, nil, false},
		{"the identity is always there", NewKeep(nil, nil), NewKeep([][]string{{"metadata", "name"}}, nil), true},
		{"a field covers a shape below it", spec, specShape, true},
		{"a shape does not cover the field", specShape, spec, false},
		{"a shape covers itself", specShape, specShape, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.k.Covers(tc.other))
		})
	}
	u := Union(app, spec)
	assert.True(t, u.Covers(app) && u.Covers(spec))
	assert.False(t, u.Covers(labels))
	assert.Equal(t, "apiVersion,kind,metadata.labels.app,metadata.name,metadata.namespace,metadata.resourceVersion,spec", u.String())
	assert.Equal(t, "apiVersion,kind,metadata.name,metadata.namespace,metadata.resourceVersion,spec.backend.port?", specShape.String())
	assert.True(t, Union(specShape, app).Covers(specShape))
	assert.Nil(t, Union(app, nil))
	assert.Equal(t, "*", (*Keep)(nil).String())
}

func TestResourceKeep(t *testing.T) {
	slices := Resource{Key: "endpoints", GVR: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
		IndexBy: []string{"metadata.namespace", "metadata.labels['kubernetes.io/service-name']", "metadata.ownerReferences[0].name"}}
	got, _ := slices.Keep([][]string{{"endpoints"}}, nil).Paths()
	assert.Contains(t, got, []string{"metadata", "labels", "kubernetes.io/service-name"}, "an index key is kept")
	assert.Contains(t, got, []string{"metadata", "ownerReferences", "name"}, "a list index reads its field of every element")
	assert.Contains(t, got, []string{"endpoints"})
	assert.NotContains(t, got, []string{"ports"})

	secrets := Resource{Key: "secrets", GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}}
	got, _ = secrets.Keep(nil, nil).Paths()
	assert.Contains(t, got, []string{"data"}, "the redactor needs a Secret's data")
	assert.Contains(t, got, []string{"stringData"})

	assert.Nil(t, slices.Keep([][]string{{}}, nil), "all of it")
}

// A shape path keeps each step and the kind of its value: a map without
// its keys, a list with its length, a scalar as it is.
func TestKeepShape(t *testing.T) {
	obj := ingressObject()
	got := NewKeep(nil, [][]string{{"spec", "rules", "http"}, {"spec", "ingressClassName"}, {"status"}, {"spec", "tls"}}).Prune(obj)
	assert.Equal(t, map[string]any{
		"ingressClassName": "htc",
		"rules":            []any{map[string]any{"http": map[string]any{}}, map[string]any{"http": map[string]any{}}},
	}, got["spec"], "an absent field (tls) stays absent")
	assert.Equal(t, map[string]any{}, got["status"])
	whole := NewKeep([][]string{{"spec", "rules", "host"}}, [][]string{{"spec", "rules", "http"}}).Prune(obj)
	assert.Equal(t, []any{map[string]any{"host": "a.example.com", "http": map[string]any{}}, map[string]any{"http": map[string]any{}}},
		whole["spec"].(map[string]any)["rules"])
	assert.Equal(t, NewKeep([][]string{{"spec"}}, nil), NewKeep([][]string{{"spec"}}, [][]string{{"spec", "x"}}), "a whole field has no shapes below")
}
