package statusdocs

import (
	"reflect"
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

// TestACarriedDecoderDecodesAsAFreshOne: a new config's Decoder given the
// live one's decodings (Carry) decodes as a fresh Decoder of its config
// does, the documents' statuses taken from the carried decodings (the
// same maps); it resolves them with its own apiVersions (a config that
// no longer writes the status of Ingresses refuses their documents), and
// a Decoder that has decoded already keeps its own cache.
func TestACarriedDecoderDecodesAsAFreshOne(t *testing.T) {
	text := doc("Ingress", "networking.k8s.io/v1", "web")
	noSources := func() *bundle.Sources { panic("no source map is built for good documents") }
	live := New(spec(&config.Template{}))
	was, _, err := live.Decode(text, stores(t), noSources, true)
	require.NoError(t, err)
	mapOf := func(docs []resourcestatus.Document) uintptr { return reflect.ValueOf(docs[0].Status).Pointer() }

	d := New(spec(&config.Template{}))
	d.Carry(live)
	docs, _, err := d.Decode(text, stores(t), noSources, false)
	require.NoError(t, err)
	fresh, _, err := New(spec(&config.Template{})).Decode(text, stores(t), noSources, false)
	require.NoError(t, err)
	assert.Equal(t, fresh, docs)
	assert.Equal(t, mapOf(was), mapOf(docs), "the carried decoding")

	noStatus := spec(&config.Template{})
	w := noStatus.WatchedResources["ingresses"]
	w.WriteStatus = false
	noStatus.WatchedResources["ingresses"] = w
	refusing := New(noStatus)
	refusing.Carry(live)
	writer := bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "writer"}
	_, _, err = refusing.Decode(text, stores(t), writtenBy(writer, text), false)
	var de *resourcestatus.Error
	require.ErrorAs(t, err, &de, "its own apiVersions")

	own := New(spec(&config.Template{}))
	mine, _, err := own.Decode(text, stores(t), noSources, true)
	require.NoError(t, err)
	own.Carry(live)
	again, _, err := own.Decode(text, stores(t), noSources, false)
	require.NoError(t, err)
	assert.Equal(t, mapOf(mine), mapOf(again), "its own cache")
	assert.NotEqual(t, mapOf(was), mapOf(again))
}
