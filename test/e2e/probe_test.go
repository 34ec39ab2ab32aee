package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/haproxy-template/htc/pkg/controller"
)

// The probe method (the field's route-propagation benchmark,
// gateway-api-bench's tests/probe): routes are applied one after another,
// each as soon as the previous one is served through HAProxy; a route is
// served when a request for it answers 200 with the route's own header.
// Between the apply returning and that first 200 the prober asks every
// probeInterval.
const (
	probeInterval = 5 * time.Millisecond
	// probeServeBound bounds the wait for one route to be served (a
	// failsafe: the test fails when a route is never served).
	probeServeBound = 60 * time.Second
	// probeApplyBound bounds one apply; the webhook's own deadline
	// (the product's default, 5 s) is far below it.
	probeApplyBound = 60 * time.Second
	// probeFloorRuns is how many bare haproxy -c runs of the published
	// configuration time the floor, after the probed routes.
	probeFloorRuns = 20
)

// probeParams are the run's sizes: HTC_PROBE_N routes probed (default 300)
// after HTC_PROBE_PRELOAD routes created without the webhook and without
// probing (default 0), of HTC_PROBE_WORKLOAD (ingress, the default, or
// gateway). HTC_PROBE_REPORT names a file the result table is appended to;
// HTC_PROBE_PROFILE a file for a CPU profile of the probed applies;
// HTC_PROBE_DEBOUNCE (a duration) the controller's --debounce instead of
// the default, to measure it; HTC_PROBE_LOG a file for the controller's
// debug log, with a line per probed route (its apply and served times) to
// find what a slow one waited for.
type probeParams struct {
	n, preload           int
	workload             string
	report, profile, log string
	debounce             time.Duration
}

// probeClock is how HTC_PROBE_LOG's probe lines give a time of day.
const probeClock = "15:04:05.000"

func probeParamsFromEnv(t *testing.T) probeParams {
	t.Helper()
	p := probeParams{n: 300, workload: "ingress", report: os.Getenv("HTC_PROBE_REPORT"), profile: os.Getenv("HTC_PROBE_PROFILE"),
		log: os.Getenv("HTC_PROBE_LOG")}
	for name, dst := range map[string]*int{"HTC_PROBE_N": &p.n, "HTC_PROBE_PRELOAD": &p.preload} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "%s", name)
			*dst = n
		}
	}
	if v := os.Getenv("HTC_PROBE_WORKLOAD"); v != "" {
		p.workload = v
	}
	if v := os.Getenv("HTC_PROBE_DEBOUNCE"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "HTC_PROBE_DEBOUNCE")
		p.debounce = d
	}
	return p
}

// TestSustainedAppliesAreNeverRefused applies valid routes one after
// another through the webhook, with the controller publishing to a real
// HAProxy on 127.0.0.1 and the product's admission deadline (5 s), each
// route as soon as the previous one is served through HAProxy, and
// asserts that no apply was refused (by timeout, busy or anything else)
// and that every route was served. make bench-propagation runs it at
// scale and reports the propagation percentiles (BENCHMARKS.md).
func TestSustainedAppliesAreNeverRefused(t *testing.T) {
	p := probeParamsFromEnv(t)
	var w probeWorkload
	switch p.workload {
	case "ingress":
		w = &ingressProbe{}
	case "gateway":
		w = &gatewayProbe{}
	default:
		t.Fatalf("HTC_PROBE_WORKLOAD=%q: want ingress or gateway", p.workload)
	}
	dir := shortTempDir(t)
	outDir := filepath.Join(dir, "out")
	socket := filepath.Join(dir, "master.sock")
	backendPort := startProbeBackend(t)
	frontend := freeAddr(t)
	_, frontendPort, _ := net.SplitHostPort(frontend)

	mustKubectl(t, installableCRD(t, env.root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	w.setup(t, frontendPort, backendPort)

	certs := generateCerts(t, dir)
	rc := startController(t, certs, func(o *controller.Options) {
		o.ConfigNamespace = w.configNamespace()
		o.OutputDir = outDir
		o.MasterSocket = socket
		// The product's deadline: a refusal by timeout is what this
		// test looks for.
		o.AdmissionTimeout = 0
		o.Debounce = p.debounce // 0: the default
	})
	// A failsafe: the Gateway library's informers and embedded tests take
	// minutes on a loaded machine.
	rc.waitReady(t, 5*time.Minute)
	cfgFile := filepath.Join(outDir, "haproxy.cfg")
	require.Eventually(t, func() bool { _, err := os.Stat(cfgFile); return err == nil }, 60*time.Second, 50*time.Millisecond,
		"the controller never wrote %s\n%s", cfgFile, rc.logs)
	startHAProxy(t, socket, cfgFile)

	client := probeDynamicClient(t)
	pr := &prober{base: "http://" + frontend, client: &http.Client{Timeout: 3 * time.Second}}
	ctx := t.Context()

	// The preloaded routes go in without the webhook and unprobed (like
	// the field's --initial-route); the last one is waited for.
	for i := range p.preload {
		obj := w.route(i, backendPort)
		_, err := client.Resource(w.gvr()).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1CreateOptions)
		require.NoError(t, err, "preloading route %d", i)
	}
	if p.preload > 0 {
		_, err := pr.waitServed(ctx, w, p.preload-1)
		require.NoError(t, err, "the last preloaded route was never served\n%s", tail(rc.logs.String(), 40))
	}

	_, port, _ := strings.Cut(rc.webhookAddr, ":")
	w.registerWebhook(t, "https://127.0.0.1:"+port+"/validate", certs.caPEM)

	if p.profile != "" {
		f, err := os.Create(p.profile)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	var samples []probeSample
	var refused []string
	for i := p.preload; i < p.preload+p.n; i++ {
		obj := w.route(i, backendPort)
		actx, cancel := context.WithTimeout(ctx, probeApplyBound)
		start := time.Now()
		_, err := client.Resource(w.gvr()).Namespace(obj.GetNamespace()).Create(actx, obj, metav1CreateOptions)
		applied := time.Now()
		cancel()
		if err != nil {
			refused = append(refused, fmt.Sprintf("route %d (%d present): %v", i, i, err))
			continue
		}
		took, err := pr.waitServed(ctx, w, i)
		if err != nil {
			t.Fatalf("route %d was admitted but never served: %v\n%s", i, err, tail(rc.logs.String(), 40))
		}
		samples = append(samples, probeSample{present: i, apply: applied.Sub(start), served: took, errors: pr.errors})
		if p.log != "" {
			fmt.Fprintf(rc.logs, "PROBE route=%d apply=%s applied=%s served=%s (apply %s, served %s later)\n", i, start.Format(probeClock),
				applied.Format(probeClock), applied.Add(took).Format(probeClock), applied.Sub(start).Round(time.Millisecond), took.Round(time.Millisecond))
		}
		pr.errors = 0
	}
	if p.profile != "" {
		pprof.StopCPUProfile()
	}
	if p.log != "" {
		require.NoError(t, os.WriteFile(p.log, []byte(rc.logs.String()), 0o644), "HTC_PROBE_LOG")
	}
	floors := probeFloors(t, outDir, min(p.n, probeFloorRuns))
	table := probeTable(p, samples, refused, floors)
	t.Logf("%s", table)
	if p.report != "" {
		f, err := os.OpenFile(p.report, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(table)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	require.Empty(t, refused, "valid routes were refused (%d of %d)", len(refused), p.n)
}

// probeFloors times runs bare `haproxy -c` runs of the configuration the
// controller published in outDir (the haproxy first in PATH, the one
// HAProxy runs), one after another: the floor the benchmark's times are
// read against (BENCHMARKS.md: performance is a ratio to it).
func probeFloors(t *testing.T, outDir string, runs int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for range runs {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "haproxy", "-c", "-f", "haproxy.cfg")
		cmd.Dir = outDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		b, err := cmd.CombinedOutput()
		took := time.Since(start)
		cancel()
		require.NoError(t, err, "the floor: haproxy -c of the published configuration\n%s", tail(string(b), 10))
		out = append(out, took)
	}
	return out
}

// probeWorkload is one library's routes for the probe method.
type probeWorkload interface {
	// setup creates the config (the library, HAProxy listening on
	// frontendPort) and the objects the routes need.
	setup(t *testing.T, frontendPort string, backendPort int)
	configNamespace() string
	gvr() schema.GroupVersionResource
	// route is route i: served by request(i) with the header served checks.
	route(i, backendPort int) *unstructured.Unstructured
	// request is the request that reaches route i through HAProxy.
	request(base string, i int) (*http.Request, error)
	// served tells whether a 200 response is route i's.
	served(resp *http.Response, i int) bool
	// registerWebhook registers the controller's webhook at url for the
	// routes' namespace and waits until it judges them.
	registerWebhook(t *testing.T, url string, caPEM []byte)
}

// probeDynamicClient is a dynamic client of the test's API server.
func probeDynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// prober asks HAProxy for a route until it is served.
type prober struct {
	base   string
	client *http.Client
	// errors counts the answers of the current route that were neither
	// 404 (not yet routed) nor 200 (served), nor connection errors.
	errors int
}

// waitServed polls route i every probeInterval until it is served and
// returns how long that took.
func (p *prober) waitServed(ctx context.Context, w probeWorkload, i int) (time.Duration, error) {
	start := time.Now()
	var last string
	for deadline := start.Add(probeServeBound); time.Now().Before(deadline); {
		req, err := w.request(p.base, i)
		if err != nil {
			return 0, err
		}
		resp, err := p.client.Do(req.WithContext(ctx))
		if err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && w.served(resp, i) {
				return time.Since(start), nil
			}
			last = resp.Status
			if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusOK {
				p.errors++
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(probeInterval):
		}
	}
	return 0, fmt.Errorf("not served within %s (last answer: %s)", probeServeBound, last)
}

// startProbeBackend serves 200 with the request's Host and the probe's
// request header echoed back (x-probe-host, x-probe-saw), on 127.0.0.1 and
// [::1] when there is one, and returns its port.
func startProbeBackend(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-probe-host", r.Host)
		w.Header().Set("x-probe-saw", r.Header.Get("x-probe-route"))
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(ln) }()
	if ln6, err := net.Listen("tcp", "[::1]:"+strconv.Itoa(port)); err == nil {
		go func() { _ = srv.Serve(ln6) }()
	}
	t.Cleanup(func() { _ = srv.Close() })
	return port
}
