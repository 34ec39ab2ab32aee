package dryrun_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

var benchSizes = []int{100, 1000, 10000}

// benchCluster is the example Ingress library over n generated Ingresses,
// each with its own Service and a 3-endpoint EndpointSlice, and a proposed
// new Ingress.
type benchCluster struct {
	*testutil.Example
	proposal store.Change
}

func newBenchCluster(b *testing.B, n int) *benchCluster {
	b.Helper()
	ex := testutil.NewExample(b, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Apps: n})
	return &benchCluster{Example: ex,
		proposal: store.Change{Operation: store.Create, Object: testutil.ClusterIngress("ns0", "app0-new", "app0")}}
}

func (c *benchCluster) overlay(b *testing.B) store.Set {
	set, err := store.ReadOnly(c.Stores).WithChange("ingresses", c.proposal)
	require.NoError(b, err)
	return set
}

// admitter is an Admitter over the cluster. Called without a deadline, it
// is bounded by nothing (the benchmark measures, it does not time out).
func (c *benchCluster) admitter() *admission.Admitter {
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: c.Pipeline, Stores: c.Stores})
	return a
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
				_, err := c.Pipeline.Render(ctx, set)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("step=render-recording/ingresses=%d", n), func(b *testing.B) {
			// What the live loop's render costs: a render that records its
			// iterations (replaying those the previous one recorded).
			live := store.ReadOnly(c.Stores)
			b.ReportAllocs()
			for b.Loop() {
				v, _ := c.Pipeline.CheckWith(ctx, live, dryrun.CheckOptions{Record: true, SkipTests: true})
				require.NoError(b, v.Err)
			}
		})
		b.Run(fmt.Sprintf("step=render-incremental/ingresses=%d", n), func(b *testing.B) {
			// The live loop's check records the live state's render; a
			// proposal replays every iteration it does not change.
			v, _ := c.Pipeline.CheckWith(ctx, store.ReadOnly(c.Stores), dryrun.CheckOptions{Record: true, SkipTests: true})
			require.NoError(b, v.Err)
			set := c.overlay(b)
			b.ReportAllocs()
			for b.Loop() {
				_, err := c.Pipeline.Render(ctx, set)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("step=check/ingresses=%d", n), func(b *testing.B) {
			rendered, err := c.Pipeline.Render(ctx, c.overlay(b))
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				_, err = c.Checker.Check(ctx, rendered)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("step=haproxy-c/ingresses=%d", n), func(b *testing.B) {
			ws, err := haproxy.NewWorkspace(b.TempDir())
			require.NoError(b, err)
			rendered, err := c.Pipeline.Render(ctx, c.overlay(b))
			require.NoError(b, err)
			require.NoError(b, bundle.Write(ws.Dir(), rendered.Relocated(ws.Dir())))
			for b.Loop() {
				cmd := exec.Command(c.Checker.HAProxyPath(), "-c", "-f", ws.Dir()+"/haproxy.cfg")
				cmd.Dir = ws.Dir()
				out, err := cmd.CombinedOutput()
				require.NoError(b, err, "%s", out)
			}
		})
		b.Run(fmt.Sprintf("step=pipeline/ingresses=%d", n), func(b *testing.B) {
			a := c.admitter()
			req := admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Create, Object: c.proposal.Object}}
			d, _ := a.Decide(ctx, req) // warms the embedded test cache, as the controller does on load
			require.True(b, d.Allowed, d.Reason)
			b.ReportAllocs()
			for b.Loop() {
				d, _ := a.Decide(ctx, req)
				require.True(b, d.Allowed, d.Reason)
			}
		})
	}
}
