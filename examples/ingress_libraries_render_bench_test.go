package examples_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkIngressLibrariesRender renders the plain Ingress library and
// the ingress-nginx library over the same N Ingresses (dataPlaneState:
// three annotations each, a redirect on one in ten; the plain library
// reads none of them), each of its own class: in full, and a proposed
// label change of one Ingress after a recording render (what a CREATE or
// UPDATE admission renders, reusing the live render's fragment records).
// Compare the two libraries' ns/op in one run (the machine is shared):
//
//	go test -run '^$' -bench IngressLibrariesRender -benchtime 5x ./examples/
func BenchmarkIngressLibrariesRender(b *testing.B) {
	for _, lib := range []struct{ name, path, class string }{
		{"ingress", "ingress/config.yaml", "htc"},
		{"ingress-nginx", ngxConfigPath, "nginx"},
	} {
		for _, n := range []int{1000, 10000} {
			cfg, err := config.LoadFile(lib.path)
			require.NoError(b, err)
			e, err := htcrender.New(&cfg.Spec)
			require.NoError(b, err)
			state := dataPlaneState(n, 8080)
			for _, ing := range state["ingresses"] {
				ing["spec"].(map[string]any)["ingressClassName"] = lib.class
			}
			live := gatewayStores(b, cfg, state)
			ctx := context.Background()
			b.Run(fmt.Sprintf("%s/ingresses=%d/full", lib.name, n), func(b *testing.B) {
				for b.Loop() {
					_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true})
					require.NoError(b, err)
				}
			})
			b.Run(fmt.Sprintf("%s/ingresses=%d/one-ingress-changed", lib.name, n), func(b *testing.B) {
				_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true})
				require.NoError(b, err)
				old, ok := live["ingresses"].Get("ns7", "app7")
				require.True(b, ok)
				upd := old.DeepCopy()
				upd.SetLabels(map[string]string{"touched": "yes"})
				upd.SetAnnotations(map[string]string{"nginx.ingress.kubernetes.io/proxy-read-timeout": "300"})
				proposal, err := store.ReadOnly(live).WithChange("ingresses", store.Change{Operation: store.Update,
					Object: upd, OldObject: old})
				require.NoError(b, err)
				for b.Loop() {
					_, err := e.Render(ctx, htcrender.Input{Stores: proposal, BaseDir: "/b"})
					require.NoError(b, err)
				}
			})
		}
	}
}
