package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/store"
)

// The data-plane benchmarks (BENCHMARKS.md, "Data plane"): the example
// Ingress library over n loopback apps, the live loop running as in the
// controller (debounced rounds) and publishing to a real HAProxy in
// master-worker mode. They use only what the live loop had before the
// runtime API (trigger, the stores, the master client), so the same file
// measures both.

// dpBench is a running live loop over the Ingress library.
type dpBench struct {
	l      *live
	stores map[string]*store.Store
	addr   string // HAProxy's frontend
	master *master.Client
}

// startDPBench starts the live loop with debounce quiet over n loopback
// apps and HAProxy on its first render.
func startDPBench(b *testing.B, n int, quiet time.Duration) *dpBench {
	b.Helper()
	if _, err := haproxy.NewChecker(haproxy.Options{}); err != nil {
		b.Skip("haproxy not installed (make haproxy)")
	}
	raiseFiles(b, n)
	addr := testutil.FreeAddr(b)
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	dir, err := os.MkdirTemp("", "htc-dpb-")
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	out, err := publish.Open(filepath.Join(dir, "out"))
	require.NoError(b, err)
	ex := testutil.NewExample(b, "../../examples/ingress/config.yaml", testutil.ExampleOptions{
		Apps: n, Loopback: true, BaseDir: out.Path(), CheckTimeout: time.Minute,
		Edit: func(cfg *config.HAProxyTemplateConfig) {
			cfg.Spec.ExtraContext = mergeExtra(b, cfg, map[string]any{"bindAddress": "127.0.0.1", "httpPort": port})
		},
	})
	if perApp(n) != 3 {
		for i := range n {
			require.NoError(b, ex.Stores["endpoints"].Add(slice(i, 8080, endpoints(i, n))))
		}
	}
	logs := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	l := newLive(a, out, nil, newStatusReporter(fakeClient(), nil, log), metrics.New(func() time.Time { return time.Time{} }), log)
	d := &dpBench{l: l, stores: ex.Stores, addr: addr}
	ctx := context.Background()
	require.True(b, l.sync(ctx), "the first round failed:\n%s", logs)
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(b, socket, filepath.Join(out.Path(), "haproxy.cfg"))
	d.master = &master.Client{SocketPath: socket}
	l.master = d.master
	require.True(b, l.sync(ctx))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.run(rctx, newDebouncer(nil, quiet, DefaultMaxDelay)) }()
	b.Cleanup(func() { cancel(); <-done })
	return d
}

// perApp is how many endpoints each of n loopback apps has: 3
// (testutil.ClusterApp), or 1 from 5,000 apps, so that HAProxy's health
// checks fit the machine's file descriptor limit.
func perApp(n int) int {
	if n >= 5000 {
		return 1
	}
	return 3
}

// raiseFiles raises the open files limit for an HAProxy with n apps (its
// maxconn of 4096 takes two descriptors each, a health-checked server one)
// up to the hard limit, or skips.
func raiseFiles(b *testing.B, n int) {
	need := uint64(2*4096 + n*perApp(n) + 1000)
	var lim syscall.Rlimit
	require.NoError(b, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		b.Skipf("HAProxy with %d apps needs about %d file descriptors; the hard limit is %d", n, need, lim.Max)
	}
	want := syscall.Rlimit{Cur: need, Max: lim.Max}
	require.NoError(b, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want))
}

// endpoints are app i's endpoints on 127.x.y.z (testutil.ClusterApp):
// address -> ready.
func endpoints(i, n int) map[string]bool {
	out := map[string]bool{}
	for j := range perApp(n) {
		out[fmt.Sprintf("127.%d.%d.%d", i/250%250, i%250, j+1)] = true
	}
	return out
}

// change applies a change to the stores and triggers a round, as an
// informer event does.
func (d *dpBench) change(b *testing.B, key string, obj *unstructured.Unstructured) {
	b.Helper()
	require.NoError(b, d.stores[key].Add(obj))
	d.l.trigger()
}

// settle waits until a round that started after every change so far has
// ended (the loop holds mu during a round).
func (d *dpBench) settle(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		d.l.mu.Lock()
		done := d.l.roundStart == d.l.changes.Load()
		d.l.mu.Unlock()
		if done {
			return
		}
		require.True(b, time.Now().Before(deadline), "the live loop did not catch up")
		time.Sleep(2 * time.Millisecond)
	}
}

// slice is app i's EndpointSlice (testutil.ClusterApp) with the given
// endpoints: address -> ready, on port.
func slice(i int, port int, endpoints map[string]bool) *unstructured.Unstructured {
	_, eps, _ := testutil.ClusterApp(i, true)
	var list []any
	for _, a := range slices.Sorted(maps.Keys(endpoints)) {
		list = append(list, map[string]any{"addresses": []any{a}, "conditions": map[string]any{"ready": endpoints[a]}})
	}
	eps.Object["endpoints"] = list
	eps.Object["ports"] = []any{map[string]any{"name": "http", "port": int64(port)}}
	return eps
}

// echoOn serves its address on ip:port (port 0: any), for the benchmarks'
// endpoints on loopback.
func echoOn(b *testing.B, ip string, port int) (string, int) {
	b.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	require.NoError(b, err)
	addr := ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, addr) })}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return addr, ln.Addr().(*net.TCPAddr).Port
}

// answeredBy sends GET / with Host host on a new connection and reports
// whether want answered.
func answeredBy(addr, host, want string) bool {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Host = host
	resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && string(body) == want
}

// BenchmarkEndpointPropagation measures how long an endpoint that turns
// ready takes to serve its first request: from the store update (what an
// informer event does; the API server and the informer are not in it) to
// the first answer from it through HAProxy, polled every millisecond with
// new connections. App 0 is served by one endpoint; a second one is added
// not ready, then turns ready (measured), then is removed, each step
// settled before the next. Reported: p50 and p99 in ms, and the reloads
// HAProxy's master counted per iteration.
func BenchmarkEndpointPropagation(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, quiet := range []time.Duration{100 * time.Millisecond, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("ingresses=%d/debounce=%s", n, quiet), func(b *testing.B) {
				d := startDPBench(b, n, quiet)
				first, port := echoOn(b, "127.250.0.1", 0)
				second, _ := echoOn(b, "127.250.0.2", port)
				d.change(b, "endpoints", slice(0, port, map[string]bool{"127.250.0.1": true}))
				d.settle(b)
				require.Eventually(b, func() bool { return answeredBy(d.addr, "app0.example.com", first) }, time.Minute, 10*time.Millisecond)
				before, err := d.master.ShowProc(context.Background())
				require.NoError(b, err)
				var took []time.Duration
				for b.Loop() {
					b.StopTimer()
					d.change(b, "endpoints", slice(0, port, map[string]bool{"127.250.0.1": true, "127.250.0.2": false}))
					d.settle(b)
					b.StartTimer()
					start := time.Now()
					d.change(b, "endpoints", slice(0, port, map[string]bool{"127.250.0.1": true, "127.250.0.2": true}))
					for !answeredBy(d.addr, "app0.example.com", second) {
						require.Less(b, time.Since(start), 2*time.Minute, "the endpoint was never served")
						time.Sleep(time.Millisecond)
					}
					took = append(took, time.Since(start))
					b.StopTimer()
					d.settle(b)
					d.change(b, "endpoints", slice(0, port, map[string]bool{"127.250.0.1": true}))
					d.settle(b)
					b.StartTimer()
				}
				after, err := d.master.ShowProc(context.Background())
				require.NoError(b, err)
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(after.Master.Reloads-before.Master.Reloads)/float64(len(took)), "reloads/op")
			})
		}
	}
}

// BenchmarkReloadsDuringChurn sends 1,000 endpoint changes (an extra
// endpoint of a random app added not ready, turned ready, removed), one
// every 20 ms, to the running live loop and reports the reloads HAProxy's
// master counted, its workers afterwards (current and old, once the loop
// caught up) and the CPU time of this process (render, check, publish) and
// of its finished children (haproxy -c) per change.
func BenchmarkReloadsDuringChurn(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, quiet := range []time.Duration{100 * time.Millisecond, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("ingresses=%d/debounce=%s", n, quiet), func(b *testing.B) {
				churn(b, n, quiet)
			})
		}
	}
}

// churn is one run of BenchmarkReloadsDuringChurn.
func churn(b *testing.B, n int, quiet time.Duration) {
	d := startDPBench(b, n, quiet)
	const changes = 1000
	r := rand.New(rand.NewPCG(1, 2))
	state := map[int]int{} // app -> 0 absent, 1 not ready, 2 ready
	for b.Loop() {
		before, err := d.master.ShowProc(context.Background())
		require.NoError(b, err)
		var ru0, rc0 syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rc0))
		for range changes {
			app := r.IntN(n)
			state[app] = (state[app] + 1) % 3
			ends := endpoints(app, n)
			if state[app] > 0 {
				ends[fmt.Sprintf("127.%d.%d.9", app/250%250, app%250)] = state[app] == 2
			}
			d.change(b, "endpoints", slice(app, 8080, ends))
			time.Sleep(20 * time.Millisecond)
		}
		d.settle(b)
		var ru1, rc1 syscall.Rusage
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
		require.NoError(b, syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rc1))
		after, err := d.master.ShowProc(context.Background())
		require.NoError(b, err)
		cpu := func(a, z syscall.Rusage) float64 {
			return float64(z.Utime.Nano()+z.Stime.Nano()-a.Utime.Nano()-a.Stime.Nano()) / 1e9
		}
		b.ReportMetric(float64(after.Master.Reloads-before.Master.Reloads), "reloads")
		b.ReportMetric(float64(len(after.Workers)+len(after.OldWorkers)), "workers")
		b.ReportMetric(cpu(ru0, ru1)/changes, "cpu-s/change")
		b.ReportMetric(cpu(rc0, rc1)/changes, "children-cpu-s/change")
	}
}
