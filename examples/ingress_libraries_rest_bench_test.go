package examples_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// BenchmarkIngressLibrariesHeapAfterCreates measures what admissions
// leave resident in the heap at rest: make bench-scale's "RSS at rest
// after the runs" against "when ready", in process. Over 1,000 Ingresses
// of bench-scale's mix (HTC_CREATE_INGRESSES=n takes n) with the plain
// Ingress library and the ingress-nginx library, it diagnoses the live
// state (Record, as the live loop does), admits one CREATE (what the
// first admission builds for the others: the embedded tests' report, a
// channel's joined text) and reads the heap at rest (heapAtRest:
// runtime.GC, debug.FreeOSMemory). Then it admits HTC_AFTER_CREATES
// (default 200) CREATEs of the mix one at a time (mixCreate, as
// bench-scale's sequential CREATEs; every 10th adds a backend section:
// regexIngress to an HTTPS app's Service) and as many again (rounded down
// to a multiple of 16) from 16 goroutines (its 16 clients of distinct
// CREATEs); HTC_AFTER_CONFIGS (default 4) config UPDATEs reading what the
// stores keep and as many reading a label they do not keep (bench-scale's
// two kinds, configUpdate: the second lists the Ingresses through a
// Source, listSource, dropped afterwards as the idle memory return stops
// the prepared watchers); then it renders in full as the controller's
// shadow checks do when idle (a CREATE's proposal by the live pipeline, a
// config UPDATE's by its own pipeline) and reads the heap at rest again:
// after one collection (return-spans-MB, return-live-MB: debug.FreeOSMemory
// alone, which is what the idle memory return did before it collected
// twice: what sync.Pools held is still reachable then) and after one more
// (after-spans-MB, after-live-MB). Spans are the heap's spans in use (the
// objects' bytes and the free room in spans holding one:
// /memory/classes/heap/objects + /memory/classes/heap/unused, what no
// return gives back), live the objects' bytes, in MB; grew-spans-MB and
// grew-live-MB are after less ready; listed-store-MB is what the store
// listed for the config UPDATEs kept live (the live bytes at rest before
// it was dropped, less those after); proposals-MB what the live pipeline's
// caches kept of the proposals' texts (the live bytes at rest before the
// idle return's admission.Admitter.Retain, less those after; with
// HTC_NO_RETAIN=1 it is not called, at ready either, to compare). HTC_HEAP_PROFILE=file writes the heap
// profiles at rest to file.ready and file.after (go tool pprof -diff_base
// file.ready file.after).
//
//	go test -run '^$' -bench 'IngressLibrariesHeapAfterCreates/ingress-nginx' -benchtime 1x ./examples/
func BenchmarkIngressLibrariesHeapAfterCreates(b *testing.B) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Skip("no haproxy in PATH")
	}
	n := envInt(b, "HTC_CREATE_INGRESSES", 1000)
	creates := envInt(b, "HTC_AFTER_CREATES", 200)
	configs := envInt(b, "HTC_AFTER_CONFIGS", 4)
	for _, lib := range []struct{ name, path, class string }{
		{"ingress", "ingress/config.yaml", "htc"},
		{"ingress-nginx", ngxConfigPath, "nginx"},
	} {
		b.Run(fmt.Sprintf("%s/ingresses=%d/creates=%d/configs=%d", lib.name, n, creates, configs), func(b *testing.B) {
			for b.Loop() {
				heapAfterCreates(b, lib.path, lib.class, bin, n, creates, configs)
			}
		})
	}
}

// heapAfterCreates is one run of BenchmarkIngressLibrariesHeapAfterCreates.
func heapAfterCreates(b *testing.B, path, class, bin string, n, creates, configs int) {
	cfg, err := config.LoadFile(path)
	require.NoError(b, err)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin, TempDir: b.TempDir()})
	require.NoError(b, err)
	defer checker.Wait()
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	require.NoError(b, err)
	update, err := configUpdate(path, false)
	require.NoError(b, err)
	listing, err := configUpdate(path, true)
	require.NoError(b, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		ing["spec"].(map[string]any)["ingressClassName"] = class
		scaleMix(ing, i, class == "nginx")
	}
	stores := gatewayStores(b, cfg, state)
	ctx := context.Background()
	env := dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }}
	source := &listSource{objects: state}
	a := &admission.Admitter{Env: env, Source: source}
	kept := map[string]*watched.Keep{} // as the informers keep them: a config reading more lists
	for _, r := range p.Model.All() {
		kept[r.Key] = p.Keep(r.WatchKey())
	}
	a.SetState(&admission.State{Pipeline: p, Stores: stores, Kept: kept})
	live, _ := p.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{MaxRounds: 4, Record: true})
	require.Nil(b, live.Verdict().Err)
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: live})
	// the first admission builds what every later one uses (the embedded
	// tests' report, a channel's joined text): ready is read after it
	decide(b, a, mixCreate(0, n, class, false))
	retain := os.Getenv("HTC_NO_RETAIN") == ""
	if retain { // as every idle memory return does
		a.Retain()
	}
	readySpans, readyLive := heapAtRest()
	writeHeapProfile(b, ".ready")

	var mu sync.Mutex
	k := 1
	next := func() *unstructured.Unstructured {
		mu.Lock()
		defer mu.Unlock()
		k++
		if k%10 == 0 { // adds a backend section and a regular expression
			return regexIngress(mixIngress(k, (k*20+11)%n, 5, class), class == "nginx")
		}
		return mixCreate(k, n, class, false)
	}
	for range creates {
		decide(b, a, next())
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range creates / 16 {
				decide(b, a, next())
			}
		})
	}
	wg.Wait()
	var proposed admission.Report // a config UPDATE judged over the live stores
	for _, req := range []admission.Request{update, listing} {
		for range configs {
			d, r := a.Decide(ctx, req)
			require.True(b, d.Allowed, d.Reason)
			if r.Proposed != nil {
				proposed = r
			}
		}
	}
	// the controller's shadow checks when idle, before its memory return:
	// a full render of a CREATE's proposal by the live pipeline, and of a
	// config UPDATE's by its proposed pipeline
	_, r := a.Decide(ctx, admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: next()}})
	require.NotNil(b, r.Trace.Stores)
	_, err = p.RenderFull(ctx, r.Trace.Stores)
	require.NoError(b, err)
	require.NotNil(b, proposed.Proposed, "a config UPDATE was judged over the live stores")
	_, err = proposed.Proposed.RenderFull(ctx, proposed.Trace.Stores)
	require.NoError(b, err)
	proposed, r = admission.Report{}, admission.Report{}
	require.NotEmpty(b, source.kept, "the config UPDATEs listed")
	_, listedLive := heapAtRest()
	// the idle return makes the live pipeline's caches forget the
	// proposals' texts (HTC_NO_RETAIN=1: not, to compare)
	if retain {
		a.Retain()
	}
	_, retainedLive := heapAtRest()
	source.stop() // and stops the prepared watchers that listed
	returnSpans, returnLive := heapAtReturn()
	_, stoppedLive := heapAtRest()
	afterSpans, afterLive := heapAtRest()
	writeHeapProfile(b, ".after")
	mb := func(v uint64) float64 { return float64(v) / 1e6 }
	b.ReportMetric(mb(readySpans), "ready-spans-MB")
	b.ReportMetric(mb(readyLive), "ready-live-MB")
	b.ReportMetric(mb(afterSpans), "after-spans-MB")
	b.ReportMetric(mb(afterLive), "after-live-MB")
	b.ReportMetric(mb(retainedLive)-mb(stoppedLive), "listed-store-MB")
	b.ReportMetric(mb(listedLive)-mb(retainedLive), "proposals-MB")
	b.ReportMetric(mb(returnSpans), "return-spans-MB")
	b.ReportMetric(mb(returnLive), "return-live-MB")
	b.ReportMetric(mb(afterSpans)-mb(readySpans), "grew-spans-MB")
	b.ReportMetric(mb(afterLive)-mb(readyLive), "grew-live-MB")
	runtime.KeepAlive(a)
	runtime.KeepAlive(live)
	runtime.KeepAlive(stores)
}

// decide admits the CREATE of obj and fails b when it is denied.
func decide(b *testing.B, a *admission.Admitter, obj *unstructured.Unstructured) {
	d, _ := a.Decide(context.Background(), admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: obj}})
	if !d.Allowed {
		b.Error(d.Reason)
	}
}

// configUpdate is bench-scale's config UPDATE (test/scale sendConfig) of
// the config at path: haproxy.cfg's template ranges over the Ingresses
// and fails on a name none has, or with listed on a label (which the
// stores do not keep: its admission lists the Ingresses).
func configUpdate(path string, listed bool) (admission.Request, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return admission.Request{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return admission.Request{}, fmt.Errorf("decoding %s: %w", path, err)
	}
	tpl, _, _ := unstructured.NestedString(obj, "spec", "haproxyConfig", "template")
	read := `eq $r.metadata.name "bench-scale-never"`
	if listed {
		read = `index (default dict $r.metadata.labels) "bench-scale/never"`
	}
	tpl += `{{- range $r := .resources.ingresses.List }}{{ if ` + read + ` }}{{ fail "never" }}{{ end }}{{ end }}` + "\n"
	if err := unstructured.SetNestedField(obj, tpl, "spec", "haproxyConfig", "template"); err != nil {
		return admission.Request{}, fmt.Errorf("changing %s: %w", path, err)
	}
	return admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update,
		Object: &unstructured.Unstructured{Object: obj}}}, nil
}

// listSource is the controller's prepared watchers (admission.Source) in
// process: a store of objects' resource, pruned to keep, built by the
// first admission that asks and kept until stop (the idle return).
type listSource struct {
	objects map[string][]map[string]any
	mu      sync.Mutex
	kept    map[string]*store.Store
}

// Store returns the store of r's objects pruned to keep.
func (l *listSource) Store(_ context.Context, r watched.Resource, keep *watched.Keep) (*store.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.kept[r.Key]; ok {
		return s, nil
	}
	s, err := store.New(r.IndexBy)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", r.Key, err)
	}
	for _, o := range l.objects[r.Key] {
		if err := s.Add(&unstructured.Unstructured{Object: keep.Prune(k8sruntime.DeepCopyJSON(o))}); err != nil {
			return nil, fmt.Errorf("store %s: %w", r.Key, err)
		}
	}
	if l.kept == nil {
		l.kept = map[string]*store.Store{}
	}
	l.kept[r.Key] = s
	return s, nil
}

// stop forgets the stores.
func (l *listSource) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = nil
}

// heapAtReturn is heapAtRest as the controller's idle memory return
// leaves the heap: one collection (debug.FreeOSMemory alone), after which
// what sync.Pools held before it is still reachable (their victim cache).
func heapAtReturn() (spans, live uint64) {
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64(), s[0].Value.Uint64()
}
