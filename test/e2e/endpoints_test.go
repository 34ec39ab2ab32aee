package e2e

import (
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/controller"
)

// Endpoint propagation and reloads during endpoint churn (issue 32's
// benchmarks), by the probe method: Kubernetes has no kubelet here, so a
// pod turning ready is an EndpointSlice update (an endpoint added ready,
// or its conditions.ready turned true) of a Service that Ingresses route
// to, and it is served when HAProxy answers a request with that endpoint's
// own address. Each endpoint is an HTTP server of this test on its own
// loopback address (endpointBackends).

// endpointParams are the run's sizes (environment variables, for make
// bench-endpoints): HTC_ENDPOINTS_PRELOAD Ingress routes (default 50) over
// HTC_ENDPOINTS_SERVICES Services (default a tenth of the routes, at least
// 1, at most 100) of two ready endpoints each; HTC_ENDPOINTS_N probed
// endpoint changes (default 6); HTC_ENDPOINTS_CHANGES changes in the churn
// (default 20); HTC_ENDPOINTS_RELOAD_ONLY=1 runs the controller reload-only
// (the comparison: the test then fails on its reloads, after its report);
// HTC_ENDPOINTS_REPORT names a file the result tables are appended to.
type endpointParams struct {
	routes, services, n, changes int
	reloadOnly                   bool
	report                       string
}

func endpointParamsFromEnv(t *testing.T) endpointParams {
	t.Helper()
	p := endpointParams{routes: 50, n: 6, changes: 20, report: os.Getenv("HTC_ENDPOINTS_REPORT"), reloadOnly: os.Getenv("HTC_ENDPOINTS_RELOAD_ONLY") == "1"}
	for name, dst := range map[string]*int{"HTC_ENDPOINTS_PRELOAD": &p.routes, "HTC_ENDPOINTS_SERVICES": &p.services, "HTC_ENDPOINTS_N": &p.n, "HTC_ENDPOINTS_CHANGES": &p.changes} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "%s", name)
			require.GreaterOrEqual(t, n, 0, "%s", name)
			*dst = n
		}
	}
	if p.services == 0 {
		p.services = min(100, max(1, p.routes/10))
	}
	require.Positive(t, p.routes, "HTC_ENDPOINTS_PRELOAD: the churn needs routes to Services")
	return p
}

// TestEndpointChangesAreServedWithoutReload preloads routes to Services
// with endpoints, then (a) adds or readies one endpoint of an otherwise
// empty Service at a time and waits until HAProxy answers from it, and (b)
// makes a churn of endpoint changes (adds, readiness flips, removals)
// across the Services; it asserts that every probed endpoint was served,
// that HAProxy comes to run every server in the state the EndpointSlices say,
// that neither phase reloaded HAProxy (the controller's reload counter and
// HAProxy's own, show proc) and that one worker runs afterwards. make
// bench-endpoints runs it at scale and reports the propagation percentiles
// and the churn's cost (BENCHMARKS.md).
func TestEndpointChangesAreServedWithoutReload(t *testing.T) {
	p := endpointParamsFromEnv(t)
	dir := shortTempDir(t)
	outDir := filepath.Join(dir, "out")
	socket := filepath.Join(dir, "master.sock")
	backends := startEndpointBackends(t)
	frontend := freeAddr(t)
	_, frontendPort, _ := net.SplitHostPort(frontend)

	mustKubectl(t, installableCRD(t, env.root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	for _, ns := range []string{endpointsConfigNS, endpointsNS} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	r, _ := eventually(t, 15*time.Second, succeeded, endpointsLibraryConfig(t, frontendPort), "apply", "-f", "-")
	require.NoError(t, r.err, "applying the config:\n%s", r)
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "-n", endpointsConfigNS, "haproxytemplateconfig/htc", "--ignore-not-found")
	})

	rc := startController(t, generateCerts(t, dir), func(o *controller.Options) {
		o.ConfigNamespace = endpointsConfigNS
		o.OutputDir = outDir
		o.MasterSocket = socket
		o.ReloadOnly = p.reloadOnly
	})
	rc.waitReady(t, 5*time.Minute)
	cfgFile := filepath.Join(outDir, "haproxy.cfg")
	require.Eventually(t, func() bool { _, err := os.Stat(cfgFile); return err == nil }, 60*time.Second, 50*time.Millisecond,
		"the controller never wrote %s\n%s", cfgFile, rc.logs)
	startHAProxy(t, socket, cfgFile)

	ctx := t.Context()
	f := newEndpointFixture(t, backends, p)
	f.preload(ctx)
	pr := &endpointProber{base: "http://" + frontend, client: &http.Client{Timeout: 3 * time.Second}}
	// The last route created is served, and the probed Services (created
	// before it) have no endpoint: HAProxy runs the preloaded state.
	last := p.routes - 1
	_, err := pr.wait(ctx, routeHost(last), anyEndpointOf(f.services[last%len(f.services)]))
	require.NoError(t, err, "the last preloaded route was never served\n%s", tail(rc.logs.String(), 40))
	for i := range f.probes {
		_, err := pr.wait(ctx, probeServiceHost(i), noEndpoint)
		require.NoError(t, err, "probed Service %d\n%s", i, tail(rc.logs.String(), 40))
	}
	base := settledReloads(t, rc, socket)

	// (a) Endpoint propagation: one endpoint of an otherwise empty Service
	// turns ready (added ready, or its ready condition turned true), timed
	// from the EndpointSlice update returning to HAProxy's first answer
	// from it; then it is taken away again (turned not ready, or removed)
	// and the Service answers 503 before the next one.
	var samples []endpointSample
	for i := range p.n {
		s := f.probes[i%len(f.probes)]
		kind := "added ready"
		if len(s.eps) == 0 {
			s.eps = []*endpoint{{ip: f.newEndpoint(), ready: true}}
		} else {
			kind = "turned ready"
			s.eps[0].ready = true
		}
		start := time.Now()
		f.update(ctx, s)
		applied := time.Now()
		took, err := pr.wait(ctx, probeServiceHost(i%len(f.probes)), fromEndpoint(s.eps[0].ip))
		require.NoError(t, err, "probe %d (%s %s) was never served\n%s", i, kind, s.eps[0].ip, tail(rc.logs.String(), 40))
		samples = append(samples, endpointSample{kind: kind, apply: applied.Sub(start), served: took})
		if kind == "added ready" {
			s.eps[0].ready = false
		} else {
			s.eps = nil
		}
		f.update(ctx, s)
		_, err = pr.wait(ctx, probeServiceHost(i%len(f.probes)), noEndpoint)
		require.NoError(t, err, "probe %d: the endpoint taken away was still served\n%s", i, tail(rc.logs.String(), 40))
	}
	afterProbes := settledReloads(t, rc, socket)

	// (b) Churn: endpoint changes back to back, each an EndpointSlice
	// update of a random Service (a fixed seed), until HAProxy runs a
	// server per endpoint in the state its EndpointSlice says.
	runtimeBase := metric(t, rc, runtimeServerApplies)
	rng := rand.New(rand.NewPCG(32, uint64(p.changes)))
	kinds := map[string]int{}
	cpu := processCPU(t)
	start := time.Now()
	for range p.changes {
		kinds[f.churn(ctx, rng)]++
	}
	applied := time.Since(start)
	converged := applied + f.waitServers(t, socket)
	spent := processCPU(t).sub(cpu)
	end := settledReloads(t, rc, socket)
	workers, old := haproxyWorkers(t, socket)

	res := endpointResult{
		params: p, samples: samples, kinds: kinds, applied: applied, converged: converged, cpu: spent,
		probeReloads: afterProbes.sub(base), churnReloads: end.sub(afterProbes),
		serverApplies: metric(t, rc, runtimeServerApplies) - runtimeBase,
		failedApplies: metric(t, rc, runtimeFailedApplies), mismatches: metric(t, rc, runtimeMismatches),
		workers: workers, oldWorkers: old, servers: f.serverCount(),
	}
	report := res.tables()
	t.Logf("\n%s", report)
	if p.report != "" {
		fh, err := os.OpenFile(p.report, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = fh.WriteString(report)
		require.NoError(t, err)
		require.NoError(t, fh.Close())
	}
	assert.Equal(t, reloadCount{}, res.probeReloads, "reloads while endpoints turned ready one by one (htc_haproxy_reloads_total, show proc)")
	assert.Equal(t, reloadCount{}, res.churnReloads, "reloads during the churn of %d endpoint changes (htc_haproxy_reloads_total, show proc)", p.changes)
	assert.Equal(t, [2]int{1, 0}, [2]int{workers, old}, "HAProxy's workers and old workers after the churn (show proc)")
	assert.Zero(t, res.failedApplies, "runtime applies that failed (%s)", runtimeFailedApplies)
	assert.Zero(t, res.mismatches, "differences the controller found between HAProxy and its files (%s)", runtimeMismatches)
}

// Series of the controller's metrics the test reads.
const (
	runtimeServerApplies = `htc_haproxy_runtime_applies_total{kind="server",result="applied"}`
	runtimeFailedApplies = `htc_haproxy_runtime_applies_total{result="failed"}`
	runtimeMismatches    = `htc_runtime_mismatch_total`
)
