package scale

// The harness's own logic, tested without a cluster: `go test
// ./test/scale/` runs these (TestScale skips itself unless HTC_SCALE_N is
// set).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ms is n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// allowedOutcomes are n allowed answers that took took each.
func allowedOutcomes(n int, took time.Duration) []outcome {
	outs := make([]outcome, n)
	for i := range outs {
		outs[i] = outcome{took: took, allowed: true}
	}
	return outs
}

// busyOutcomes are n denials of a busy controller.
func busyOutcomes(n int) []outcome {
	outs := make([]outcome, n)
	for i := range outs {
		outs[i] = outcome{took: ms(1), reason: "htc is busy: too many changes are being checked at once"}
	}
	return outs
}

// testReport is a report of one run with known samples: floor p50 100 ms
// and p99 200 ms (with the checker's environment 80 ms and 160 ms); CREATEs adding a backend p50 300 ms and p99 400 ms; 10
// allowed distinct CREATEs and 30 busy denials in 10 s on 2 cores.
func testReport() *report {
	s := settings{n: 1000, runs: 1, requests: 2, clients: 16, duration: time.Minute, command: "make bench-scale N=1000", workload: workloads["ingress"]}
	r := runResult{
		index:     1,
		loadStart: "1.00 1.00 1.00", loadEnd: "2.00 2.00 2.00",
		first:         outcome{took: ms(150), allowed: true},
		floors:        []time.Duration{ms(100), ms(100), ms(100), ms(100), ms(100), ms(100), ms(100), ms(200), ms(200), ms(200)},
		checkerFloors: []time.Duration{ms(80), ms(80), ms(80), ms(80), ms(80), ms(80), ms(80), ms(160), ms(160), ms(160)},
		creates:       allowedOutcomes(2, ms(120)),
		backends:      []outcome{{took: ms(300), allowed: true}, {took: ms(400), allowed: true}},
		updates:       allowedOutcomes(2, ms(2)),
		configsKept:   allowedOutcomes(2, ms(500)),
		configsListed: allowedOutcomes(2, ms(900)),
		list:          listed{objects: 1000, took: ms(2500), ok: true},
		listWhile:     outcome{took: ms(5000), reason: "the proposed config could not be judged: it reads ingresses.v1.networking.k8s.io otherwise than the config in use, and listing them from the API server goes on after the admission deadline; apply it again in a moment"},
		backendPh: phaseMeans{dryRun: ms(350), n: 2,
			phases: []phaseMean{{phase: "render", mean: ms(200), n: 2}, {phase: "syntax", mean: ms(140), n: 2}, {phase: "semantic", mean: ms(900), n: 1}}},
		distinct:  concResult{clients: 16, wall: 10 * time.Second, outs: append(allowedOutcomes(10, ms(900)), busyOutcomes(30)...)},
		same:      concResult{clients: 16, identical: true, wall: 10 * time.Second, outs: allowedOutcomes(1000, ms(2))},
		rssLoaded: rss{now: 300 << 20, peak: 400 << 20}, rssEnd: rss{now: 350 << 20, peak: 450 << 20},
		rssLoadedRest: rss{now: 200 << 20},
	}
	return &report{settings: s, machine: machine{cores: 2}, runs: []runResult{r},
		loaded: loadStats{objects: 3004, spares: s.spares(), took: time.Second, workers: 16, qps: 300}}
}

// TestMarkdownRows checks the rows of the CREATE adding a backend and the
// concurrency rows' throughput ratio, which counts allowed admissions only.
func TestMarkdownRows(t *testing.T) {
	md := testReport().markdown()
	lines := strings.Split(md, "\n")
	for _, tc := range []struct {
		name string
		want []string // consecutive lines of the table
	}{
		{"floor over all five kinds", []string{
			"| **floor**: bare `haproxy -c`, p50 / p99 (10 runs) | 100 ms / 200 ms |",
			"| … `haproxy -c` with the checker's environment (MALLOC_CONF=thp:always,metadata_thp:always), p50 / p99 (10 runs) | 80 ms / 160 ms |",
		}},
		{"config UPDATEs, with and without a list", []string{
			"| config UPDATE reading what the stores keep, p50 / p99 (2) | 500 ms / 500 ms |",
			"| … **÷ floor**, p50 / p99 | **5.00× / 2.50×** |",
			"| … ÷ `haproxy -c` with the checker's environment, p50 / p99 | 6.25× / 3.12× |",
			"| … denied, errors | 0, 0 |",
			"| … server side: dry run; phases (mean) | –; no render, no check (the change renders alike) |",
			"| config UPDATE reading what the stores do not keep: its first admission lists the Ingresses (a prepared watcher), listed in; that admission | 1,000 Ingresses in 2.50 s; 5.00 s (denied: not judged yet: listing) |",
			"| … then, its watcher prepared, p50 / p99 (2) | 900 ms / 900 ms |",
		}},
		{"map-only CREATE keeps its row", []string{
			"| CREATE (new route, existing backend), p50 / p99 (2) | 120 ms / 120 ms |",
			"| … **÷ floor**, p50 / p99 | **1.20× / 0.60×** |",
		}},
		{"CREATE adding a backend", []string{
			"| CREATE adding a backend, p50 / p99 (2) | 300 ms / 400 ms |",
			"| … **÷ floor**, p50 / p99 | **3.00× / 2.00×** |",
			"| … ÷ `haproxy -c` with the checker's environment, p50 / p99 | 3.75× / 2.50× |",
			"| … denied, errors | 0, 0 |",
			"| … server side: dry run; phases (mean) | 350 ms; render 200 ms, syntax 140 ms, semantic 900 ms (in 1 of 2) |",
			"| label-only UPDATE, p50 / p99 (2) | 2.0 ms / 2.0 ms |",
		}},
		{"distinct CREATEs: busy denials are no throughput", []string{
			"| 16 clients × 1m0s, distinct CREATEs: answers/s (allowed/s) | 4.00 (1.00) |",
			"| … p50 / p99 | 1.0 ms / 900 ms |",
			"| … denied (reason), errors | 30 (busy 30), 0 |",
			"| … **allowed/s** ÷ (cores ÷ floor p50) | 0.05 |",
		}},
		{"one identical CREATE", []string{
			"| … **allowed/s** ÷ (cores ÷ floor p50) | 5.00 |",
			"| controller RSS when ready (VmRSS / VmHWM) | 300 MiB / 400 MiB |",
			"| controller RSS after the runs (VmRSS / VmHWM) | 350 MiB / 450 MiB |",
			"| controller RSS **at rest**, at its last idle memory return (none for 45 s after it): when ready; after the runs | 200 MiB; – (no idle memory return) |",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !containsRun(lines, tc.want) {
				t.Errorf("no lines\n%s\nin\n%s", strings.Join(tc.want, "\n"), md)
			}
		})
	}
	if strings.Contains(md, "answers/s ÷") {
		t.Errorf("a ratio of answers/s, busy denials included:\n%s", md)
	}
	if want := "Loaded 3,004 objects (1,000 Ingresses, Services, EndpointSlices; 2 more Services with EndpointSlices that no Ingress uses, one per \"CREATE adding a backend\" sample)"; !strings.Contains(md, want) {
		t.Errorf("no %q in\n%s", want, md)
	}
	if !strings.HasPrefix(md, "### 1,000 Ingresses\n") {
		t.Errorf("heading of the Ingress workload:\n%s", md)
	}
	rep := testReport()
	rep.runs[0].list, rep.runs[0].listWhile = listed{notNeeded: true}, outcome{took: ms(600), allowed: true}
	if want := "| config UPDATE reading what the stores do not keep: its first admission lists the Ingresses (a prepared watcher), listed in; that admission | not needed (the stores keep what it reads); 600 ms |"; !strings.Contains(rep.markdown(), want) {
		t.Errorf("a list not needed: no %q in\n%s", want, rep.markdown())
	}
	rep = testReport()
	rep.settings.workload = workloads["gateway"]
	md = rep.markdown()
	for _, want := range []string{"### 1,000 HTTPRoutes on one Gateway (`WORKLOAD=gateway`)\n",
		"Loaded 3,004 objects (1,000 HTTPRoutes, Services, EndpointSlices; 2 more Services with EndpointSlices that no HTTPRoute uses"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// TestBlocksOfEachWorkload: each workload's block of an N is replaced by
// its next run, and never another workload's; a new block goes before the
// same workload's block of a larger N.
func TestBlocksOfEachWorkload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte("# Benchmarks\n\n## Machine\n\nx\n\n## Other\n\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ing, gw := workloads["ingress"], workloads["gateway"]
	for _, step := range []struct {
		w     workload
		n     int
		table string
	}{{ing, 10000, "I10k\n"}, {gw, 1000, "G1k\n"}, {ing, 1000, "I1k\n"}, {gw, 1000, "G1k again\n"}, {gw, 100, "G100\n"}} {
		if err := updateBenchmarks(path, step.w, step.n, step.table); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var at []int
	for _, table := range []string{"I1k", "I10k", "G100", "G1k again"} {
		i := strings.Index(doc, table+"\n")
		if i < 0 {
			t.Fatalf("no %s in\n%s", table, doc)
		}
		at = append(at, i)
	}
	if strings.Contains(doc, "G1k\n") {
		t.Errorf("the gateway block of 1,000 was not replaced:\n%s", doc)
	}
	if !slices.IsSorted(at) || strings.Index(doc, "## Other") < at[len(at)-1] {
		t.Errorf("blocks out of order (at %v):\n%s", at, doc)
	}
	if got := strings.Count(doc, "<!-- bench-scale WORKLOAD=gateway N=1000 begin -->"); got != 1 {
		t.Errorf("%d gateway N=1000 blocks:\n%s", got, doc)
	}
}

// containsRun reports whether want occurs in lines as consecutive lines.
func containsRun(lines, want []string) bool {
	for i := range lines {
		if i+len(want) > len(lines) {
			return false
		}
		ok := true
		for j, w := range want {
			if lines[i+j] != w {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestPerCoreFloor checks allowed/s ÷ (cores ÷ floor p50).
func TestPerCoreFloor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		outs  []outcome
		wall  time.Duration
		floor time.Duration
		cores int
		want  string
	}{
		{"all allowed", allowedOutcomes(20, ms(100)), 10 * time.Second, ms(500), 2, "0.50"},
		{"busy denials do not count", append(allowedOutcomes(20, ms(100)), busyOutcomes(200)...), 10 * time.Second, ms(500), 2, "0.50"},
		{"errors do not count", append(allowedOutcomes(4, ms(100)), outcome{err: "HTTP 500"}), time.Second, ms(250), 1, "1.00"},
		{"nothing allowed", busyOutcomes(5), time.Second, ms(100), 2, "0.00"},
		{"no floor", allowedOutcomes(1, ms(1)), time.Second, 0, 2, "–"},
		{"no time", allowedOutcomes(1, ms(1)), 0, ms(100), 2, "–"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := perCoreFloor(count(tc.outs), tc.wall, tc.floor, tc.cores); got != tc.want {
				t.Errorf("perCoreFloor = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestBackendObjects checks that every "CREATE adding a backend" sample of
// every run is a new route name routing to a spare Service of its own:
// one that is loaded (index in N..N+spares-1, same namespace) and that no
// loaded route uses, for each workload.
func TestBackendObjects(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) { testBackendObjects(t, w) })
	}
}

func testBackendObjects(t *testing.T, w workload) {
	h := &harness{s: settings{n: 1000, runs: 3, requests: 20, workload: w}}
	names, services := map[string]bool{}, map[string]bool{}
	for run := 1; run <= h.s.runs; run++ {
		for k := range h.s.requests {
			app := h.s.spareApp(run, k)
			if app < h.s.n || app >= h.s.n+h.s.spares() {
				t.Fatalf("run %d sample %d: spare app %d outside [%d, %d)", run, k, app, h.s.n, h.s.n+h.s.spares())
			}
			objs := appObjects(w, app, true)
			if len(objs) != 2 || objs[0].gvr != gvrService || objs[1].gvr != gvrSlice {
				t.Fatalf("spare app %d: want a Service and an EndpointSlice, not a route", app)
			}
			if loaded := appObjects(w, app, false); len(loaded) != 3 || loaded[2].gvr != w.gvr || loaded[2].obj.GetKind() != w.route {
				t.Fatalf("app %d: want a Service, an EndpointSlice and a %s", app, w.route)
			}
			ing := h.backendObject(fmt.Sprintf("bench-r%d-b%d", run, k), run, k)
			svc := backendService(t, ing)
			if want := objs[0].obj.GetName(); svc != want || ing.GetNamespace() != objs[0].obj.GetNamespace() {
				t.Errorf("run %d sample %d: routes to %s/%s, want the spare %s/%s", run, k, ing.GetNamespace(), svc, objs[0].obj.GetNamespace(), want)
			}
			key := ing.GetNamespace() + "/" + ing.GetName()
			if names[key] || services[ing.GetNamespace()+"/"+svc] {
				t.Errorf("run %d sample %d: %s or its Service %s used by another sample", run, k, key, svc)
			}
			names[key], services[ing.GetNamespace()+"/"+svc] = true, true
		}
	}
}

// backendService is the Service of the first path of the first rule of
// an Ingress (testutil.ClusterIngress has one of each), or of the first
// backendRef of the first rule of an HTTPRoute.
func backendService(t *testing.T, ing *unstructured.Unstructured) string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
	if ing.GetKind() == "HTTPRoute" && len(rules) > 0 {
		refs, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
		if len(refs) == 0 {
			t.Fatalf("HTTPRoute %s: no backendRefs", ing.GetName())
		}
		name, _, _ := unstructured.NestedString(refs[0].(map[string]any), "name")
		return name
	}
	if len(rules) == 0 {
		t.Fatalf("Ingress %s: no rules", ing.GetName())
	}
	rule, _ := rules[0].(map[string]any)
	paths, _, _ := unstructured.NestedSlice(rule, "http", "paths")
	if len(paths) == 0 {
		t.Fatalf("Ingress %s: no paths", ing.GetName())
	}
	path, _ := paths[0].(map[string]any)
	name, _, _ := unstructured.NestedString(path, "backend", "service", "name")
	return name
}
