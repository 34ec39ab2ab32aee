package manifest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/store/manifest"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string // kind/name of each object
		err       string
	}{
		{"multi-document", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n", []string{"Service/a", "Secret/b"}, ""},
		{"json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"}}`, []string{"Service/a"}, ""},
		{"list", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: a}}\n- {apiVersion: v1, kind: Service, metadata: {name: b}}\n", []string{"Service/a", "Service/b"}, ""},
		{"invalid yaml", "apiVersion: v1\nkind: [\n", nil, "f.yaml: document 1: invalid YAML"},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", nil, "f.yaml: document 1: apiVersion and kind are required"},
		{"no name", "apiVersion: v1\nkind: Service\n---\n", nil, "f.yaml: document 1: Service has no metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := manifest.Decode("f.yaml", []byte(tc.doc))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLoadPathsDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("apiVersion: v1\nkind: Service\nmetadata: {name: b}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "a.yml"), []byte("apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml"), 0o600))
	objs, err := manifest.LoadPaths([]string{dir})
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, "b", objs[0].GetName(), "lexical order: b.yaml before sub/a.yml")
	assert.Equal(t, filepath.Join(dir, "b.yaml")+"#1", objs[0].Source)

	_, err = manifest.LoadPaths([]string{filepath.Join(dir, "missing")})
	require.ErrorContains(t, err, "missing")
}

func TestRESTMapper(t *testing.T) {
	crd, err := manifest.Decode("crd.yaml", []byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgetz, singular: widget}
  versions: [{name: v1, served: true, storage: true}]
`))
	require.NoError(t, err)
	m, err := manifest.NewRESTMapper(crd)
	require.NoError(t, err)
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want schema.GroupVersionResource
	}{
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, schema.GroupVersionResource{Version: "v1", Resource: "services"}},
		{schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"}, schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}},
		{schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}, schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgetz"}},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}, schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GatewayClass"}, schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "BackendTLSPolicy"}, schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "backendtlspolicies"}},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1beta1", Kind: "ReferenceGrant"}, schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}},
	} {
		mapping, err := m.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
		require.NoError(t, err, tc.gvk.String())
		assert.Equal(t, tc.want, mapping.Resource)
	}
	_, err = m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1")
	assert.Error(t, err)
	for gk, want := range map[schema.GroupKind]meta.RESTScopeName{
		{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}: meta.RESTScopeNameRoot,
		{Group: "gateway.networking.k8s.io", Kind: "Gateway"}:      meta.RESTScopeNameNamespace,
	} {
		mapping, err := m.RESTMapping(gk, "v1")
		require.NoError(t, err, gk.String())
		assert.Equal(t, want, mapping.Scope.Name(), gk.String())
	}
}

// TestRESTMapperKnowsTheGatewayAPIAsItsCRDsDeclareIt resolves every kind
// and served version of the Gateway API's standard CRDs (from the module
// go.mod requires) without the CRDs, to the plural and scope they declare.
func TestRESTMapperKnowsTheGatewayAPIAsItsCRDsDeclareIt(t *testing.T) {
	m, err := manifest.NewRESTMapper(nil)
	require.NoError(t, err)
	checked := 0
	for _, path := range testutil.GatewayAPICRDs(t) {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		objs, err := manifest.Decode(path, raw)
		require.NoError(t, err)
		for _, crd := range objs {
			var spec struct {
				Group    string
				Scope    string
				Names    struct{ Kind, Plural string }
				Versions []struct {
					Name   string
					Served bool
				}
			}
			b, err := json.Marshal(crd.Object["spec"])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &spec))
			if spec.Names.Kind == "ListenerSet" {
				continue // in the CRDs, but not in the module's typed API
			}
			for _, v := range spec.Versions {
				if !v.Served {
					continue
				}
				mapping, err := m.RESTMapping(schema.GroupKind{Group: spec.Group, Kind: spec.Names.Kind}, v.Name)
				require.NoError(t, err, "%s %s", spec.Names.Kind, v.Name)
				assert.Equal(t, spec.Names.Plural, mapping.Resource.Resource, "%s %s", spec.Names.Kind, v.Name)
				assert.Equal(t, spec.Scope == "Cluster", mapping.Scope.Name() == meta.RESTScopeNameRoot, "%s scope", spec.Names.Kind)
				checked++
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 12, "kinds and versions checked")
}

// TestObjectsDecodeAsTheInformersDecodeThem: a manifest's object holds the
// values of the same object from the API server (the informers' and the
// webhook's unstructured JSON decoding: whole numbers as int64), so that a
// template sees the same in htc render and htc check as in the controller
// (printf "%d", eq with an int, typeOf).
func TestObjectsDecodeAsTheInformersDecodeThem(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {port: 80, ratio: 1.5, whole: 2.0, big: 9007199254740993, list: [1, 2.5, {n: 3}], none: null, empty: [], map: {}}\n"
	objs, err := manifest.Decode("f.yaml", []byte(doc))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	asJSON, err := yaml.YAMLToJSON([]byte(doc))
	require.NoError(t, err)
	informer, _, err := unstructured.UnstructuredJSONScheme.Decode(asJSON, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, informer.(*unstructured.Unstructured).Object, objs[0].Object)
	assert.IsType(t, int64(0), objs[0].Object["spec"].(map[string]any)["port"])
}
