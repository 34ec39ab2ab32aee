package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// TestWarnRidesOnTheBundleAboutItsObject: warn gives a warning about an
// object without stopping the render, outside a fragment and inside one,
// and a fragment whose record is reused warns again, as it did when it ran.
func TestWarnRidesOnTheBundleAboutItsObject(t *testing.T) {
	_, set := fragmentStores(t)
	e := mustEngine(t, `{{ range $i := .resources.ingresses.List }}{{ if eq $i.metadata.name "a" }}{{ warn $i "a is old" }}{{ end }}{{ end }}{{ fragments "f" .resources.ingresses }}`,
		withSnippet("f", `{{ .item.metadata.name }}{{ warn .item (printf "%s has an unknown annotation" .item.metadata.name) }} `))
	want := []bundle.Warning{
		{Object: bundle.ObjectRef{Kind: "Ingress", Namespace: "ns", Name: "a"}, Message: "a is old"},
		{Object: bundle.ObjectRef{Kind: "Ingress", Namespace: "ns", Name: "a"}, Message: "a has an unknown annotation"},
		{Object: bundle.ObjectRef{Kind: "Ingress", Namespace: "ns", Name: "b"}, Message: "b has an unknown annotation"},
	}
	for _, in := range []Input{{Stores: set, BaseDir: "/b", Record: true}, {Stores: set, BaseDir: "/b"}} {
		b, err := e.Render(context.Background(), in)
		require.NoError(t, err)
		assert.Equal(t, "a b ", b.Config)
		assert.Equal(t, want, b.Warnings)
		assert.Equal(t, []string{"a is old", "a has an unknown annotation"}, b.WarningsAbout("Ingress", "ns", "a"))
		assert.Empty(t, b.WarningsAbout("Ingress", "other", "a"))
	}
	assert.Equal(t, FragmentStats{Reused: 2, Ran: 2}, e.FragmentStats(), "the second render reused both records")
}

func TestWarnWantsAnObject(t *testing.T) {
	_, set := fragmentStores(t)
	e := mustEngine(t, `{{ warn "x" "message" }}`)
	_, err := e.Render(context.Background(), Input{Stores: set})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "warn: want OBJECT MESSAGE, where OBJECT is a resource object, got string")
}
