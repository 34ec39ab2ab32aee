// Package scale measures admission at scale, end to end: a real
// kube-apiserver and etcd on 127.0.0.1 (hack/apiserver-up.sh, the test
// assets), the example Ingress library with N Ingresses, N Services and N
// EndpointSlices (plus RUNS × REQUESTS spare Services and EndpointSlices no
// Ingress uses, the backends of the CREATEs that add one), or with
// WORKLOAD=gateway the Gateway library with N HTTPRoutes on one Gateway
// instead of the Ingresses (the Gateway API's CRDs from the module), the controller as
// a process of its own (`htc controller --output-dir`), and AdmissionReviews
// POSTed over HTTPS to its /validate.
// Every latency is reported beside a bare `haproxy -c` of the published
// configuration timed in the same run (the floor), and as a ratio to it.
//
// It runs only when asked for (it takes minutes; timings belong in
// benchmarks, never in pass/fail tests):
//
//	make bench-scale N=1000 RUNS=3
//	# = HTC_SCALE_N=1000 HTC_SCALE_RUNS=3 go test -count=1 -v -timeout 4h -run '^TestScale$' ./test/scale/
//
// with haproxy in PATH (make haproxy). Settings (environment):
//
//	HTC_SCALE_N        number of apps (Ingress + Service + EndpointSlice); unset: the test is skipped
//	HTC_SCALE_WORKLOAD ingress (default) or gateway: an HTTPRoute per app instead of an Ingress
//	HTC_SCALE_RUNS     measured runs, each with a fresh controller (default 1)
//	HTC_SCALE_REQUESTS sequential admissions of each kind per run (default 20): CREATEs of a new route
//	                   to an existing backend, CREATEs adding a backend, label-only UPDATEs, UPDATEs
//	                   of the config reading what the stores keep and reading what they do not
//	                   (listed from the API server); the floor runs before each of them (five
//	                   times as often)
//	HTC_SCALE_CLIENTS  concurrent clients (default 16)
//	HTC_SCALE_DURATION how long the concurrent clients send (default 60s)
//	HTC_SCALE_PROFILE  directory: after the runs, one more controller (built with a pprof
//	                   listener) is profiled: heap after loading, CPU during sequential CREATEs,
//	                   then CPU during sequential config UPDATEs
//	HTC_SCALE_PROFILE_SECONDS  length of each of those CPU profiles (default 30)
//	HTC_SCALE_BIN      the htc binary (default: built into the run's temporary directory)
//	HTC_SCALE_REPORT   the BENCHMARKS.md to update (default: the repository's; "-": none)
//	HTC_SCALE_COMMAND  the command line recorded in the report
//	HTC_SCALE_LOAD_QPS client QPS while loading the objects (default 300)
//
// The test fails only when the harness cannot measure (the API server does
// not start, loading fails, the controller never gets ready or exits);
// slow answers, denials and timeouts are results.
package scale

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// settings are the run's parameters (see the package documentation).
type settings struct {
	n, runs, requests, clients int
	workload                   workload
	duration                   time.Duration
	profileDir                 string
	profileFor                 time.Duration
	bin                        string
	report                     string
	command                    string
	loadQPS                    float32
	loadWorkers                int
}

// sequentialKinds is how many kinds of sequential admission a run sends,
// h.s.requests of each, each after a floor (see harness.run).
const sequentialKinds = 5

// spares is how many Services (each with its EndpointSlice) are loaded
// beside the N apps without an Ingress: one per "CREATE adding a backend"
// sample of every run, so that no two samples add the same backend.
func (s settings) spares() int { return s.runs * s.requests }

// spareApp is the testutil.ClusterApp index of the spare Service of sample
// k (0 ≤ k < requests) of run (1 ≤ run ≤ runs): apps N.. are the spares.
func (s settings) spareApp(run, k int) int { return s.n + (run-1)*s.requests + k }

func readSettings(t *testing.T, root string) settings {
	t.Helper()
	s := settings{runs: 1, requests: 20, clients: 16, duration: time.Minute, profileFor: 30 * time.Second,
		loadQPS: 300, loadWorkers: 16, report: filepath.Join(root, "BENCHMARKS.md")}
	atoi := func(name string, dst *int, lo int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo {
				t.Fatalf("%s=%q: want an integer ≥ %d", name, v, lo)
			}
			*dst = n
		}
	}
	atoi("HTC_SCALE_N", &s.n, 1)
	s.workload = workloads["ingress"]
	if v := os.Getenv("HTC_SCALE_WORKLOAD"); v != "" {
		w, ok := workloads[v]
		if !ok {
			t.Fatalf("HTC_SCALE_WORKLOAD=%q: want ingress, ingress-nginx, gateway or gateway-tls", v)
		}
		s.workload = w
	}
	atoi("HTC_SCALE_RUNS", &s.runs, 1)
	atoi("HTC_SCALE_REQUESTS", &s.requests, 1)
	atoi("HTC_SCALE_CLIENTS", &s.clients, 1)
	if v := os.Getenv("HTC_SCALE_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Hour {
			t.Fatalf("HTC_SCALE_DURATION=%q: want a duration in (0, 1h]", v)
		}
		s.duration = d
	}
	var secs int
	atoi("HTC_SCALE_PROFILE_SECONDS", &secs, 1)
	if secs > 0 {
		s.profileFor = time.Duration(secs) * time.Second
	}
	if v := os.Getenv("HTC_SCALE_LOAD_QPS"); v != "" {
		f, err := strconv.ParseFloat(v, 32)
		if err != nil || f <= 0 {
			t.Fatalf("HTC_SCALE_LOAD_QPS=%q: want a positive number", v)
		}
		s.loadQPS = float32(f)
	}
	if v := os.Getenv("HTC_SCALE_PROFILE"); v != "" {
		abs, err := filepath.Abs(v)
		if err != nil {
			t.Fatal(err)
		}
		s.profileDir = abs
	}
	s.bin = os.Getenv("HTC_SCALE_BIN")
	if v, ok := os.LookupEnv("HTC_SCALE_REPORT"); ok && v != "" {
		s.report = v
	}
	s.command = os.Getenv("HTC_SCALE_COMMAND")
	if s.command == "" {
		s.command = fmt.Sprintf("HTC_SCALE_N=%d HTC_SCALE_RUNS=%d HTC_SCALE_WORKLOAD=%s go test -count=1 -v -timeout 4h -run '^TestScale$' ./test/scale/", s.n, s.runs, s.workload.name)
	}
	return s
}

// TestScale is the whole benchmark: cluster, loading, runs, report.
func TestScale(t *testing.T) {
	if os.Getenv("HTC_SCALE_N") == "" {
		t.Skip("a benchmark of several minutes: set HTC_SCALE_N (make bench-scale N=1000|10000)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	s := readSettings(t, root)

	// Ctrl-C or SIGTERM ends the measurements; the cleanups below then
	// stop the controller and the API server and remove the directory.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h := newHarness(t, ctx, root, s)
	h.startCluster()
	h.load()
	h.resolveBinary()

	rep := &report{settings: s, machine: describeMachine(root, h.bin), loaded: h.loaded}
	for i := 1; i <= s.runs; i++ {
		r := h.run(i)
		rep.runs = append(rep.runs, r)
		t.Logf("run %d of %d done:\n%s", i, s.runs, r.summary())
	}
	if s.profileDir != "" {
		rep.profile = h.profile()
	}
	rep.published = h.published
	table := rep.markdown()
	fmt.Printf("\n%s\n", table)
	if s.report != "-" {
		if err := updateBenchmarks(s.report, s.workload, s.n, table); err != nil {
			t.Fatalf("writing %s: %v", s.report, err)
		}
		t.Logf("wrote the %s N=%d section of %s", s.workload.name, s.n, s.report)
	}
	if ctx.Err() != nil {
		t.Fatal("interrupted")
	}
}

// harness is the state of one TestScale.
type harness struct {
	t    *testing.T
	ctx  context.Context
	root string
	s    settings
	dir  string // temporary directory of this invocation

	assets     string
	kubeconfig string
	cluster    *cluster
	loaded     loadStats
	bin        string
	binPprof   string // the binary with a pprof listener (profiling only)
	cert       certFiles
	published  publishedStats
}

func newHarness(t *testing.T, ctx context.Context, root string, s settings) *harness {
	dir, err := os.MkdirTemp("", "htc-scale-")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, root: root, s: s, dir: dir}
	// Registered first, so it runs last: after the controller and the
	// API server were stopped.
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	h.startGuardian()
	return h
}

// checkCtx fails the test when it was interrupted.
func (h *harness) checkCtx() {
	h.t.Helper()
	if h.ctx.Err() != nil {
		h.t.Fatal("interrupted")
	}
}

// logf logs progress with the wall-clock time.
func (h *harness) logf(format string, args ...any) {
	h.t.Helper()
	h.t.Logf("%s %s", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
