package examples_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// BenchmarkGatewayCreate admits CREATEs of new HTTPRoutes to existing
// Services over 10,000 HTTPRoutes on one Gateway (the objects of make
// bench-scale WORKLOAD=gateway, pruned and shared as the controller's
// informers keep them: prunedGatewayStores), as bench-scale's "CREATE
// (new route, existing backend)" and its 16 clients of distinct CREATEs
// ask the webhook. Each CREATE is another HTTPRoute (no decision or check
// outcome can be reused); the live state was diagnosed once with Record,
// as the live loop does.
//
//   - admit: the whole decision (Admitter.Decide: render and every check
//     phase, haproxy -c when haproxy.cfg is not the live one's), with
//     cpu-ms/op (the process's CPU per CREATE, its haproxy -c children not
//     counted) and the mean of each phase per CREATE;
//   - admit-16-clients: 16 goroutines deciding CREATEs back to back
//     (answers/s), and the cores the process kept busy meanwhile;
//   - render: the CREATE's render alone (dryrun.Pipeline.Render);
//   - config-update-render: the render of a config UPDATE that changes
//     haproxy.cfg as make bench-scale's do (a new pipeline carrying the
//     live one's fragment records: dryrun.Pipeline.CarryFrom).
//
// routes=1000_tls=1000 is bench-scale's WORKLOAD=gateway-tls at N=1000:
// 1,000 HTTPRoutes, and 1,000 ListenerSets with a TLS Passthrough
// listener each with a TLSRoute on each (prunedGatewayTLSStores).
//
// HTC_CPU_PROFILE=file writes the CPU profile of admit's admissions
// alone, HTC_ALLOC_PROFILE=file the allocations profile before and after
// them (file.before, file.after: go tool pprof -diff_base). Run it with the controller's GC setting (--gc-percent auto: 50):
//
//	GOGC=50 go test -run '^$' -bench 'GatewayCreate' -benchtime 40x ./examples/
func BenchmarkGatewayCreate(b *testing.B) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Skip("no haproxy in PATH")
	}
	for _, state := range []struct{ n, tls int }{{10000, 0}, {1000, 1000}} {
		name := fmt.Sprintf("routes=%d", state.n)
		if state.tls > 0 {
			name += fmt.Sprintf("_tls=%d", state.tls) // no comma: b.TempDir is in haproxy.cfg
		}
		b.Run(name, func(b *testing.B) { benchmarkGatewayCreate(b, bin, state.n, state.tls) })
	}
}

// benchmarkGatewayCreate is BenchmarkGatewayCreate over n apps, the first
// tls of them with a ListenerSet and a TLSRoute.
func benchmarkGatewayCreate(b *testing.B, bin string, n, tls int) {
	cfg, err := config.LoadFile("gateway/config.yaml")
	require.NoError(b, err)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin, TempDir: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(checker.Wait)
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	require.NoError(b, err)
	stores := prunedGatewayTLSStores(b, p, n, tls)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a busy machine
	defer cancel()
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	live, _ := p.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{MaxRounds: 4, Record: true})
	require.Nil(b, live.Verdict().Err, "the live state fails")
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: live})
	var mu sync.Mutex
	created := 0
	create := func() *unstructured.Unstructured {
		mu.Lock()
		k := created
		created++
		mu.Unlock()
		app := (k * 7919) % n
		ns, svc := fmt.Sprintf("ns%d", app%50), fmt.Sprintf("app%d", app)
		return testutil.ClusterHTTPRoute(ns, fmt.Sprintf("bench-create-%d", k), svc, "htc-system", "gw")
	}
	decide := func() (admission.Decision, admission.Report) {
		return a.Decide(ctx, admission.Request{Change: watched.Change{Resource: httproutesResource, Operation: store.Create, Object: create()}})
	}
	// Two admissions first: the live diagnosis's embedded tests left the
	// status decodings of their fixtures (statusdocs.Decoder), so the
	// first decodes every route's status document again.
	for range 2 {
		d, _ := decide()
		require.True(b, d.Allowed, d.Reason)
	}
	runtime.GC()
	b.Run("admit", func(b *testing.B) {
		phases := map[phase.Phase]time.Duration{}
		if f := os.Getenv("HTC_CPU_PROFILE"); f != "" { // the admissions alone
			out, err := os.Create(f)
			require.NoError(b, err)
			require.NoError(b, pprof.StartCPUProfile(out))
			defer func() { pprof.StopCPUProfile(); require.NoError(b, out.Close()) }()
		}
		allocs := func(suffix string) {
			if f := os.Getenv("HTC_ALLOC_PROFILE"); f != "" { // diff .after -base .before
				out, err := os.Create(f + suffix)
				require.NoError(b, err)
				require.NoError(b, pprof.Lookup("allocs").WriteTo(out, 0))
				require.NoError(b, out.Close())
			}
		}
		allocs(".before")
		defer allocs(".after")
		cpu := processCPU()
		for b.Loop() {
			d, r := decide()
			require.True(b, d.Allowed, d.Reason)
			for ph, t := range r.Trace.Durations {
				phases[ph] += t
			}
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		for ph, t := range phases {
			b.ReportMetric(float64(t)/float64(time.Millisecond)/float64(b.N), string(ph)+"-ms/op")
		}
	})
	b.Run("admit-16-clients", func(b *testing.B) {
		b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		start, cpu := time.Now(), processCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if d, _ := decide(); !d.Allowed {
					b.Error(d.Reason)
				}
			}
		})
		wall := time.Since(start)
		b.ReportMetric(float64(b.N)/wall.Seconds(), "answers/s")
		b.ReportMetric(float64(processCPU()-cpu)/float64(wall), "cores")
	})
	b.Run("render", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			set, err := store.ReadOnly(stores).WithChange("httproutes", store.Change{Operation: store.Create, Object: create()})
			require.NoError(b, err)
			_, err = p.Render(ctx, set)
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
	b.Run("config-update-render", func(b *testing.B) {
		spec := cfg.DeepCopy()
		spec.Spec.HAProxyConfig.Template += "{{- range $r := .resources.httproutes.List }}{{ if eq $r.metadata.name \"bench-scale-never\" }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
		cpu := processCPU()
		for b.Loop() {
			proposed, err := dryrun.Build(spec, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
			require.NoError(b, err)
			require.Positive(b, proposed.CarryFrom(p))
			_, err = proposed.Render(ctx, store.ReadOnly(stores))
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
}

var httproutesResource = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
