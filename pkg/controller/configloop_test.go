package controller

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWatchNamespacesByScope(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		gvr        schema.GroupVersionResource
		want       []string
		wantErr    string
	}{
		{"all", nil, servicesGVR, nil, ""},
		{"namespaced", []string{"a", "b"}, servicesGVR, []string{"a", "b"}, ""},
		{"cluster-scoped", []string{"a"}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}, nil, ""},
		{"unknown", []string{"a"}, schema.GroupVersionResource{Version: "v1", Resource: "nothings"}, nil, "is nothings.v1 namespaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := restMapper().(*meta.DefaultRESTMapper)
			m.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"}, meta.RESTScopeRoot)
			c := newController(Options{WatchNamespaces: tc.namespaces}, slog.New(slog.DiscardHandler), fakeClient(), m, nil)
			got, err := c.watchNamespaces(tc.gvr)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
