package dryrun_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

var benchSizes = []int{100, 1000, 10000}

// benchCluster is the example Ingress library over n generated Ingresses,
// each with its own Service and a 3-endpoint EndpointSlice.
type benchCluster struct {
	pipeline *dryrun.Pipeline
	checker  *haproxy.Checker
	stores   map[string]*store.Store
	proposal store.Change
}

func newBenchCluster(b *testing.B, n int) *benchCluster {
	b.Helper()
	cfg, err := config.LoadFile("../../examples/ingress/config.yaml")
	require.NoError(b, err)
	checker, err := haproxy.NewChecker(haproxy.Options{})
	require.NoError(b, err)
	p, err := dryrun.NewPipeline(cfg, checker, b.TempDir())
	require.NoError(b, err)
	stores, err := dryrun.NewStores(&cfg.Spec)
	require.NoError(b, err)
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)
		require.NoError(b, stores["services"].Add(u(map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}})))
		var eps []any
		for j := range 3 {
			eps = append(eps, map[string]any{"addresses": []any{fmt.Sprintf("10.%d.%d.%d", i/250%250, i%250, j+1)}, "conditions": map[string]any{"ready": true}})
		}
		require.NoError(b, stores["endpoints"].Add(u(map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    map[string]any{"name": name + "-x", "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
			"addressType": "IPv4", "ports": []any{map[string]any{"name": "http", "port": int64(8080)}}, "endpoints": eps})))
		require.NoError(b, stores["ingresses"].Add(benchIngress(ns, name)))
	}
	return &benchCluster{pipeline: p, checker: checker, stores: stores,
		proposal: store.Change{Operation: store.Create, Object: benchIngress("ns0", "app0-new")}}
}

func benchIngress(ns, name string) *unstructured.Unstructured {
	svc := name
	if len(svc) > 4 && svc[len(svc)-4:] == "-new" {
		svc = svc[:len(svc)-4]
	}
	return u(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"ingressClassName": "htc", "rules": []any{map[string]any{"host": name + ".example.com", "http": map[string]any{"paths": []any{
			map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": svc, "port": map[string]any{"name": "http"}}}}}}}}}})
}

func u(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func (c *benchCluster) overlay(b *testing.B) store.Set {
	set, err := dryrun.ReadOnly(c.stores).WithChange("ingresses", c.proposal)
	require.NoError(b, err)
	return set
}

// BenchmarkAdmission measures each step of one admission of a new Ingress
// and the whole ValidateDirect, beside a bare `haproxy -c` of the same
// rendered configuration (the floor).
func BenchmarkAdmission(b *testing.B) {
	for _, n := range benchSizes {
		c := newBenchCluster(b, n)
		ctx := context.Background()

		b.Run(fmt.Sprintf("step=overlay/ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.overlay(b)
			}
		})
		b.Run(fmt.Sprintf("step=render/ingresses=%d", n), func(b *testing.B) {
			set := c.overlay(b)
			b.ReportAllocs()
			for b.Loop() {
				_, err := c.pipeline.Engine.Render(ctx, render.Input{Stores: set, BaseDir: "/tmp/htc-bench"})
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("step=check/ingresses=%d", n), func(b *testing.B) {
			set := c.overlay(b)
			b.ReportAllocs()
			b.StopTimer()
			for range b.N {
				ws, err := haproxy.NewWorkspace(b.TempDir())
				require.NoError(b, err)
				bundle, err := c.pipeline.Engine.Render(ctx, render.Input{Stores: set, BaseDir: ws.Dir()})
				require.NoError(b, err)
				b.StartTimer()
				_, err = c.checker.Check(ctx, bundle)
				b.StopTimer()
				require.NoError(b, err)
				require.NoError(b, ws.Remove())
			}
		})
		b.Run(fmt.Sprintf("step=haproxy-c/ingresses=%d", n), func(b *testing.B) {
			ws, err := haproxy.NewWorkspace(b.TempDir())
			require.NoError(b, err)
			bundle, err := c.pipeline.Engine.Render(ctx, render.Input{Stores: c.overlay(b), BaseDir: ws.Dir()})
			require.NoError(b, err)
			require.NoError(b, haproxy.WriteBundle(ws.Dir(), bundle))
			for b.Loop() {
				cmd := exec.Command(c.checker.HAProxyPath(), "-c", "-f", ws.Dir()+"/haproxy.cfg")
				cmd.Dir = ws.Dir()
				out, err := cmd.CombinedOutput()
				require.NoError(b, err, "%s", out)
			}
		})
		b.Run(fmt.Sprintf("step=pipeline/ingresses=%d", n), func(b *testing.B) {
			v := dryrun.NewDryRunValidator(&dryrun.State{Pipeline: c.pipeline, Stores: c.stores})
			v.DirectTimeout = dryrun.DefaultProposalTimeout // measure, don't time out
			req := dryrun.Request{Resource: ingressesGVR, Operation: store.Create, Object: c.proposal.Object}
			d := v.ValidateDirect(ctx, req) // warms the embedded test cache, as the controller does on load
			require.True(b, d.Allowed, d.Reason)
			b.ReportAllocs()
			for b.Loop() {
				d := v.ValidateDirect(ctx, req)
				require.True(b, d.Allowed, d.Reason)
			}
		})
	}
}
