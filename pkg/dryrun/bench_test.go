package dryrun_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
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
	require.NoError(b, testutil.AddClusterApps(stores, n, false))
	return &benchCluster{pipeline: p, checker: checker, stores: stores,
		proposal: store.Change{Operation: store.Create, Object: testutil.ClusterIngress("ns0", "app0-new", "app0")}}
}

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
				bdl, err := c.pipeline.Engine.Render(ctx, render.Input{Stores: set, BaseDir: ws.Dir()})
				require.NoError(b, err)
				b.StartTimer()
				_, err = c.checker.Check(ctx, bdl)
				b.StopTimer()
				require.NoError(b, err)
				require.NoError(b, ws.Remove())
			}
		})
		b.Run(fmt.Sprintf("step=haproxy-c/ingresses=%d", n), func(b *testing.B) {
			ws, err := haproxy.NewWorkspace(b.TempDir())
			require.NoError(b, err)
			rendered, err := c.pipeline.Engine.Render(ctx, render.Input{Stores: c.overlay(b), BaseDir: ws.Dir()})
			require.NoError(b, err)
			require.NoError(b, bundle.Write(ws.Dir(), rendered))
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
