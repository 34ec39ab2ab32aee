package examples_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// BenchmarkIngressLibrariesCreate admits CREATEs of new Ingresses of make
// bench-scale's mix (scaleMix: the k-th CREATE carries the mix's
// annotations of k mod 20) routing to existing Services, over 1,000
// Ingresses of the mix, with the plain Ingress library and the
// ingress-nginx library: what bench-scale's "CREATE (new route, existing
// backend)" and its 16 clients of distinct CREATEs ask the webhook. Each
// CREATE is another Ingress (no decision or check outcome can be reused);
// the live state was diagnosed once with Record, as the live loop does.
//
//   - admit: the whole decision (render and every check phase with the
//     real haproxy -c; the embedded tests' report is cached by the spec).
//     Besides ns/op and cpu-ms/op (the process's CPU per CREATE, its
//     haproxy -c children not counted; theirs: haproxy-cpu-ms/op) and the
//     CREATEs' p50-ms and p99-ms, it reports the mean of each phase
//     per CREATE, the share of CREATEs that ran haproxy -c on the whole
//     bundle (semantic-share: their haproxy.cfg is not the live one's),
//     the share whose regular expression maps a stub haproxy -c checked
//     alone instead (alone-share), the share whose added backend sections
//     a stub haproxy -c checked alone (sections-share), the share whose
//     added sections and changed regular expression maps one stub checked
//     (both-share), and the mean wall time of those that ran none
//     (maps-only-ms), of those that ran a stub (alone-ms, sections-ms,
//     both-ms) and of those that ran haproxy -c (haproxy-c-ms);
//
//   - admit-maps-only: the same with CREATEs of the mix's classes that
//     write no line (writesLines) to backends without settings of their
//     own: what every CREATE would cost if the library kept those
//     settings in maps;
//
//   - admit-sections-and-maps: CREATEs that add a backend section and
//     change the regular expression map (use-regex with a path of a
//     regular expression, regexIngress, to the Service of an HTTPS
//     backend), p50-ms, p99-ms and both-share (one stub checked both);
//
//   - admit-16-clients (-maps-only): 16 goroutines deciding CREATEs back
//     to back (answers/s), as bench-scale's 16 clients, and the cores the
//     process kept busy meanwhile (cores) and its haproxy -c runs
//     (haproxy-cores);
//
//   - floor: bench-scale's floor, a bare haproxy -c of the live bundle;
//
//   - render: the CREATE's render alone (HTC_CPU_PROFILE=file writes
//     the CPU profile of its renders alone, HTC_ALLOC_PROFILE=file the
//     allocations profile before and after them).
//
//     go test -run '^$' -bench 'IngressLibrariesCreate' -benchtime 100x ./examples/
func BenchmarkIngressLibrariesCreate(b *testing.B) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Skip("no haproxy in PATH")
	}
	n := envInt(b, "HTC_CREATE_INGRESSES", 1000)
	for _, lib := range benchLibraries {
		live := newMixLive(b, bin, lib, n, dryrun.Env{})
		p, stores, a := live.p, live.stores, live.a
		ctx := context.Background()
		created := 0
		create := func(mapsOnly bool) *unstructured.Unstructured {
			k := created
			created++
			return mixCreate(k, n, lib.class, mapsOnly)
		}
		for _, mapsOnly := range []bool{false, true} {
			name := "admit"
			if mapsOnly {
				name = "admit-maps-only"
			}
			b.Run(fmt.Sprintf("%s/mix/ingresses=%d/%s", lib.name, n, name), func(b *testing.B) {
				phases := map[phase.Phase]time.Duration{}
				// CREATEs whose haproxy.cfg is the live one's (maps only), the
				// others, those whose maps a stub checked alone, and those whose
				// added backend sections a stub checked alone
				var took [5]time.Duration
				var count [5]int
				walls := make([]time.Duration, 0, b.N)
				var slow []createTook // every CREATE, for HTC_CREATE_SLOWEST
				cpu, children := processCPU(), childrenCPU()
				for b.Loop() {
					k := created
					req := admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: create(mapsOnly)}}
					gcs := gcCycles()
					start := time.Now()
					d, r := a.Decide(ctx, req)
					t := time.Since(start)
					gcs = gcCycles() - gcs
					require.True(b, d.Allowed, d.Reason)
					for ph, t := range r.Trace.Durations {
						phases[ph] += t
					}
					ran := 0
					if _, ok := r.Trace.Durations[phase.Semantic]; ok && !r.Trace.SemanticReused {
						ran = 1
					} else if r.Trace.MapsCheckedAlone > 0 && r.Trace.SectionsCheckedAlone > 0 {
						ran = 4
					} else if r.Trace.MapsCheckedAlone > 0 {
						ran = 2
					} else if r.Trace.SectionsCheckedAlone > 0 {
						ran = 3
					}
					took[ran] += t
					count[ran]++
					walls = append(walls, t)
					slow = append(slow, createTook{t, mixClass(k, mapsOnly), ran, gcs, r.Trace.Durations})
				}
				logSlowest(b, slow)
				b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(childrenCPU()-children)/float64(time.Millisecond)/float64(b.N), "haproxy-cpu-ms/op")
				reportWalls(b, walls)
				reportPhases(b, phases)
				b.ReportMetric(float64(count[1])/float64(b.N), "semantic-share")
				b.ReportMetric(float64(count[2])/float64(b.N), "alone-share")
				b.ReportMetric(float64(count[3])/float64(b.N), "sections-share")
				b.ReportMetric(float64(count[4])/float64(b.N), "both-share")
				for i, name := range []string{"maps-only-ms", "haproxy-c-ms", "alone-ms", "sections-ms", "both-ms"} {
					if count[i] > 0 {
						b.ReportMetric(float64(took[i])/float64(time.Millisecond)/float64(count[i]), name)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("%s/mix/ingresses=%d/admit-sections-and-maps", lib.name, n), func(b *testing.B) {
			// CREATEs that add a backend section and change the regular
			// expression map: use-regex with a path of a regular
			// expression (regexIngress: class 5's Ingress, the rewrite-target
			// dropped) to the Service of an Ingress with a backend of its
			// own (class 11: HTTPS), which needs a plain backend. One stub
			// checks both (both-share).
			walls := make([]time.Duration, 0, b.N)
			both := 0
			cpu, children := processCPU(), childrenCPU()
			for b.Loop() {
				k := created
				created++
				app := (k*20 + 11) % n
				req := admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: regexIngress(mixIngress(k, app, 5, lib.class), lib.class == "nginx")}}
				start := time.Now()
				d, r := a.Decide(ctx, req)
				walls = append(walls, time.Since(start))
				require.True(b, d.Allowed, d.Reason)
				if r.Trace.MapsCheckedAlone > 0 && r.Trace.SectionsCheckedAlone > 0 {
					both++
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(childrenCPU()-children)/float64(time.Millisecond)/float64(b.N), "haproxy-cpu-ms/op")
			b.ReportMetric(float64(both)/float64(b.N), "both-share")
			reportWalls(b, walls)
		})
		for _, mapsOnly := range []bool{false, true} {
			name := "admit-16-clients"
			if mapsOnly {
				name = "admit-16-clients-maps-only"
			}
			b.Run(fmt.Sprintf("%s/mix/ingresses=%d/%s", lib.name, n, name), func(b *testing.B) {
				// bench-scale's 16 clients of distinct CREATEs, in process: 16
				// goroutines deciding CREATEs back to back (without a deadline:
				// none is turned away busy, each waits for a slot).
				var mu sync.Mutex
				next := func() *unstructured.Unstructured {
					mu.Lock()
					defer mu.Unlock()
					return create(mapsOnly)
				}
				b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				start, cpu, children := time.Now(), processCPU(), childrenCPU()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						d, _ := a.Decide(ctx, admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: next()}})
						if !d.Allowed {
							b.Error(d.Reason)
						}
					}
				})
				wall := time.Since(start)
				b.ReportMetric(float64(b.N)/wall.Seconds(), "answers/s")
				b.ReportMetric(float64(processCPU()-cpu)/float64(wall), "cores")
				b.ReportMetric(float64(childrenCPU()-children)/float64(wall), "haproxy-cores")
			})
		}
		b.Run(fmt.Sprintf("%s/mix/ingresses=%d/floor", lib.name, n), func(b *testing.B) {
			// bench-scale's floor: a bare haproxy -c of the live bundle;
			// "admit-16-clients" its 16 clients of distinct CREATEs (answers/s).
			ws, err := haproxy.NewWorkspace(b.TempDir())
			require.NoError(b, err)
			rendered, err := p.Render(ctx, store.ReadOnly(stores))
			require.NoError(b, err)
			require.NoError(b, bundle.Write(ws.Dir(), rendered.Relocated(ws.Dir())))
			for b.Loop() {
				cmd := exec.Command(bin, "-c", "-f", ws.Dir()+"/haproxy.cfg")
				cmd.Dir = ws.Dir()
				out, err := cmd.CombinedOutput()
				require.NoError(b, err, "%s", out)
			}
		})
		b.Run(fmt.Sprintf("%s/mix/ingresses=%d/render", lib.name, n), func(b *testing.B) {
			if f := os.Getenv("HTC_CPU_PROFILE"); f != "" { // the renders alone
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
				set, err := store.ReadOnly(stores).WithChange("ingresses", store.Change{Operation: store.Create, Object: create(false)})
				require.NoError(b, err)
				_, err = p.Render(ctx, set)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// mixCreate is the k-th CREATE of the benchmark's mix over n Ingresses
// of class: a new Ingress to the Service of an existing one (app), in its
// namespace, with the annotations of the mix's class k mod 20; mapsOnly:
// of a class that writes no line, to a backend without settings of its
// own.
func mixCreate(k, n int, class string, mapsOnly bool) *unstructured.Unstructured {
	app := (k * 7919) % n
	mix := mixClass(k, mapsOnly)
	for mapsOnly && writesLines[app%20] {
		app = (app + 1) % n
	}
	return mixIngress(k, app, mix, class)
}

// mixIngress is the k-th CREATE's Ingress: of class, to the Service of
// Ingress app, with the annotations of the mix's class mix.
func mixIngress(k, app, mix int, class string) *unstructured.Unstructured {
	ing := map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": fmt.Sprintf("bench-create-%d", k), "namespace": fmt.Sprintf("ns%d", app%50)},
		"spec": map[string]any{"ingressClassName": class, "rules": []any{map[string]any{"host": fmt.Sprintf("bench-create-%d.example.com", k), "http": map[string]any{"paths": []any{
			map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": fmt.Sprintf("app%d", app), "port": map[string]any{"name": "http"}}}}}}}}}}
	scaleMix(ing, mix, class == "nginx")
	return &unstructured.Unstructured{Object: ing}
}

// regexIngress is ing (of the mix's class 5: rewrite-target with
// use-regex) with use-regex only and, with regexPaths (the ingress-nginx
// library), a path of a regular expression its library cannot read as
// strings: its location is a line of the regular expression map.
func regexIngress(ing *unstructured.Unstructured, regexPaths bool) *unstructured.Unstructured {
	if !regexPaths {
		return ing
	}
	ing.SetAnnotations(map[string]string{"nginx.ingress.kubernetes.io/use-regex": "true"})
	rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
	path := rules[0].(map[string]any)["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)
	path["path"], path["pathType"] = "/app/v[0-9]+", "ImplementationSpecific"
	_ = unstructured.SetNestedSlice(ing.Object, rules, "spec", "rules")
	return ing
}

// createTook is one CREATE of the admit benchmarks: its wall time, its
// class of the mix, what its semantic phase ran (0 nothing, 1 haproxy -c
// of the whole bundle, 2 the maps stub, 3 the sections stub, 4 both) and
// its phases' times, and how many GC cycles ended meanwhile.
type createTook struct {
	wall   time.Duration
	mix    int
	ran    int
	gcs    uint64
	phases map[phase.Phase]time.Duration
}

// logSlowest logs the slowest HTC_CREATE_SLOWEST CREATEs (none unset)
// with their class of the mix, what their semantic phase ran and their
// phases: what makes the p99.
func logSlowest(b *testing.B, took []createTook) {
	n := envInt(b, "HTC_CREATE_SLOWEST", 0)
	slices.SortFunc(took, func(x, y createTook) int { return int(y.wall - x.wall) })
	for _, t := range took[:min(n, len(took))] {
		b.Logf("%.1f ms: class %d, ran %d, %d GC cycles, phases %v", float64(t.wall)/float64(time.Millisecond), t.mix, t.ran, t.gcs, t.phases)
	}
}

// gcCycles is how many GC cycles have ended.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// mixClass is the class of the mix of the k-th CREATE (mixCreate's).
func mixClass(k int, mapsOnly bool) int {
	mix := k % 20
	for mapsOnly && writesLines[mix] {
		mix = (mix + 1) % 20
	}
	return mix
}

// writesLines are the classes of make bench-scale's mix
// (testutil.NginxMixAnnotations) whose new Ingress changes haproxy.cfg or
// a map HAProxy compiles under the ingress-nginx library, so that its
// check runs haproxy -c on a stub or on the whole bundle: a backend of
// its own (affinity: 10, backend-protocol: 11; a stub haproxy -c checks
// added backend sections alone; a new Ingress of another class to such an
// app's Service uses its plain backend, declared beside the other, and
// changes maps only, but admit-maps-only keeps to the other apps still). A
// whitelist-source-range (7) another Ingress has already adds map
// entries only, and so does rewrite-target with use-regex (5, 15): its
// path /app(/|$)(.*) is read as exact and prefix strings (a "lit" regex
// host; before, a line of the regular expression map, which a stub
// haproxy -c checked alone) (TestNginxMixCreatesThatChangeHAProxyCfg).
var writesLines = map[int]bool{10: true, 11: true}

var ingressesResource = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}

// childrenCPU is the CPU time (user and system) of the process's children
// that ended and were waited for (the checker's haproxy -c runs).
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchLibrary is an Ingress library the admission benchmarks compare: its
// config and the class its Ingresses name.
type benchLibrary struct{ name, path, class string }

// benchLibraries are the plain Ingress library and the ingress-nginx one.
var benchLibraries = []benchLibrary{
	{"ingress", "ingress/config.yaml", "htc"},
	{"ingress-nginx", ngxConfigPath, "nginx"},
}

// mixLive is a library's live state in the admission benchmarks: its
// config and pipeline, the stores holding n Ingresses of make
// bench-scale's mix (scaleMix) of the library's class with their Services
// and EndpointSlices, and an Admitter whose State and Baseline are those,
// the live state diagnosed once with Record as the live loop does.
type mixLive struct {
	cfg    *config.HAProxyTemplateConfig
	p      *dryrun.Pipeline
	stores map[string]*store.Store
	a      *admission.Admitter
}

// newMixLive builds lib's live state over n Ingresses of the mix, its
// pipelines built with env and a checker running bin (env.CheckerFor is
// set); the stores keep whole objects (State.Kept).
func newMixLive(b *testing.B, bin string, lib benchLibrary, n int, env dryrun.Env) mixLive {
	b.Helper()
	cfg, err := config.LoadFile(lib.path)
	require.NoError(b, err)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin, TempDir: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(checker.Wait)
	env.CheckerFor = func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }
	p, err := dryrun.Build(cfg, env)
	require.NoError(b, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		ing["spec"].(map[string]any)["ingressClassName"] = lib.class
		scaleMix(ing, i, lib.class == "nginx")
	}
	stores := gatewayStores(b, cfg, state)
	kept := map[string]*watched.Keep{} // nil: whole objects
	for _, r := range p.Model.All() {
		kept[r.Key] = nil
	}
	a := &admission.Admitter{Env: env}
	a.SetState(&admission.State{Pipeline: p, Stores: stores, Kept: kept})
	live, _ := p.Diagnose(context.Background(), store.ReadOnly(stores), dryrun.DiagnoseOptions{MaxRounds: 4, Record: true})
	require.Nil(b, live.Verdict().Err, "the live state of %s fails", lib.name)
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: live})
	return mixLive{cfg: cfg, p: p, stores: stores, a: a}
}

// reportWalls reports the p50-ms and p99-ms of walls (sorting it).
func reportWalls(b *testing.B, walls []time.Duration) {
	slices.Sort(walls)
	b.ReportMetric(float64(walls[len(walls)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(walls[len(walls)*99/100])/float64(time.Millisecond), "p99-ms")
}

// reportPhases reports the mean of each phase's durations over b.N.
func reportPhases(b *testing.B, phases map[phase.Phase]time.Duration) {
	for ph, t := range phases {
		b.ReportMetric(float64(t)/float64(time.Millisecond)/float64(b.N), string(ph)+"-ms/op")
	}
}
