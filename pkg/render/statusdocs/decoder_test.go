package statusdocs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/render/sourcemap"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// spec watches ingresses (writeStatus) and services.
func spec(status *config.Template) *config.HAProxyTemplateConfigSpec {
	return &config.HAProxyTemplateConfigSpec{ResourceStatus: status, WatchedResources: map[string]config.WatchedResource{
		"ingresses": {APIVersion: "networking.k8s.io/v1", Resources: "ingresses", WriteStatus: true},
		"services":  {APIVersion: "v1", Resources: "services"},
	}}
}

func stores(t *testing.T) store.Set {
	t.Helper()
	ing, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	require.NoError(t, ing.Add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"namespace": "a", "name": "web"}}}))
	return store.Set{"ingresses": ing}
}

func doc(kind, apiVersion, name string) string {
	return "{apiVersion: " + apiVersion + ", kind: " + kind + ", metadata: {namespace: a, name: " + name + "}, status: {}}"
}

// writtenBy is the source map of a resourceStatus output of which the
// object ref wrote everything.
func writtenBy(ref bundle.ObjectRef, text string) func() *bundle.Sources {
	return func() *bundle.Sources {
		sm, obj := &sourcemap.Builder{}, map[string]any{}
		sm.Returned(ref.Store, obj, &ref)
		sm.Enter(obj, &ref)
		sm.Wrote(0)
		sm.Finish(TemplateName, text)
		return sm.Sources()
	}
}

func TestAConfigWithoutResourceStatusHasNoDecoder(t *testing.T) {
	assert.Nil(t, New(spec(nil)))
	assert.Equal(t, map[string]string{"ingresses": "networking.k8s.io/v1"}, New(spec(&config.Template{})).apiVersions, "only resources with writeStatus")
}

func TestABadDocumentIsAttributedToItsObjectWhenWatchedElseToItsWriter(t *testing.T) {
	writer := bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "writer"}
	for _, tc := range []struct {
		name, text string
		want       []bundle.ObjectRef
	}{
		{"a second document for a watched object", doc("Ingress", "networking.k8s.io/v1", "web") + "\n---\n" + doc("Ingress", "networking.k8s.io/v1", "web"),
			[]bundle.ObjectRef{{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "web"}}},
		{"an object not in the state", doc("Ingress", "networking.k8s.io/v1", "gone"), []bundle.ObjectRef{writer}},
		{"a resource without writeStatus", doc("Service", "v1", "web"), []bundle.ObjectRef{writer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, objs, err := New(spec(&config.Template{})).Decode(tc.text, stores(t), writtenBy(writer, tc.text), false)
			_, ok := err.(*resourcestatus.Error)
			require.True(t, ok, "want a *resourcestatus.Error, got %v", err)
			assert.Nil(t, docs)
			assert.Equal(t, tc.want, objs)
		})
	}
}

func TestGoodDocumentsAreDecodedAndResolved(t *testing.T) {
	text := doc("Ingress", "networking.k8s.io/v1", "web")
	d := New(spec(&config.Template{}))
	for range 2 { // the second from the cache
		docs, objs, err := d.Decode(text, stores(t), func() *bundle.Sources { panic("no source map is built for good documents") }, false)
		require.NoError(t, err)
		assert.Nil(t, objs)
		require.Len(t, docs, 1)
		assert.Equal(t, "ingresses", docs[0].Store)
	}
	assert.NotNil(t, d.cache.Load())
}
