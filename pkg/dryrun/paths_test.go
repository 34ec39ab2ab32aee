package dryrun_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// within returns a context with timeout d, as the webhook handler gives a
// decision (cancelled when tb ends).
func within(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// pathsIngress is an Ingress of class htc in namespace default routing
// host paths.example.com, paths /p<first> .. /p<first+n-1> (Prefix), to
// port "http" of the Service echo.
func pathsIngress(name string, first, n int) *unstructured.Unstructured {
	paths := make([]any, 0, n)
	for i := first; i < first+n; i++ {
		paths = append(paths, map[string]any{"path": fmt.Sprintf("/p%05d", i), "pathType": "Prefix",
			"backend": map[string]any{"service": map[string]any{"name": "echo", "port": map[string]any{"name": "http"}}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{"ingressClassName": "htc", "rules": []any{
			map[string]any{"host": "paths.example.com", "http": map[string]any{"paths": paths}}}}}}
}

// pathsCase is the example library over the Service echo (3 endpoints)
// with n paths routed to it, laid out either as one Ingress proposed as a
// whole (one) or as n Ingresses of one path each, the last one proposed
// (many). Both render the same bundle.
type pathsCase struct {
	ex  *testutil.Example
	req admission.Request
}

func newPathsCase(tb testing.TB, n int, one bool) *pathsCase {
	tb.Helper()
	ex := testutil.NewExample(tb, "../../examples/ingress/config.yaml", testutil.ExampleOptions{})
	svc, eps, _ := testutil.ClusterApp(0, false)
	svc.SetName("echo")
	svc.SetNamespace("default")
	eps.SetNamespace("default")
	eps.SetLabels(map[string]string{"kubernetes.io/service-name": "echo"})
	require.NoError(tb, ex.Stores["services"].Add(svc))
	require.NoError(tb, ex.Stores["endpoints"].Add(eps))
	proposed := pathsIngress("big", 0, n)
	if !one {
		for i := range n - 1 {
			require.NoError(tb, ex.Stores["ingresses"].Add(pathsIngress(fmt.Sprintf("one-%05d", i), i, 1)))
		}
		proposed = pathsIngress(fmt.Sprintf("one-%05d", n-1), n-1, 1)
	}
	return &pathsCase{ex: ex, req: admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Create, Object: proposed}}}
}

func (c *pathsCase) admitter() *admission.Admitter {
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: c.ex.Pipeline, Stores: c.ex.Stores})
	return a
}

func (c *pathsCase) overlay(tb testing.TB) store.Set {
	set, _, err := c.ex.Pipeline.Model.Overlay(store.ReadOnly(c.ex.Stores), c.req.Change)
	require.NoError(tb, err)
	return set
}

// BenchmarkPathsPerIngress measures one Ingress with n paths against the
// same n paths spread over n Ingresses (the same bundle): render alone and
// the whole admission, each reported as one-ns/op, many-ns/op and their
// ratio one/many. A library linear in paths per Ingress keeps the ratio
// near 1.
func BenchmarkPathsPerIngress(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 15000} {
		one, many := newPathsCase(b, n, true), newPathsCase(b, n, false)
		b.Run(fmt.Sprintf("step=render/paths=%d", n), func(b *testing.B) {
			so, sm := one.overlay(b), many.overlay(b)
			var tOne, tMany time.Duration
			for b.Loop() {
				start := time.Now()
				_, err := one.ex.Pipeline.Render(ctx, so)
				require.NoError(b, err)
				mid := time.Now()
				_, err = many.ex.Pipeline.Render(ctx, sm)
				require.NoError(b, err)
				tOne, tMany = tOne+mid.Sub(start), tMany+time.Since(mid)
			}
			reportRatio(b, tOne, tMany)
		})
		b.Run(fmt.Sprintf("step=admission/paths=%d", n), func(b *testing.B) {
			ao, am := one.admitter(), many.admitter()
			for _, c := range []struct {
				a *admission.Admitter
				r admission.Request
			}{{ao, one.req}, {am, many.req}} { // warms the embedded tests' cache
				d, _ := c.a.Decide(ctx, c.r)
				require.True(b, d.Allowed, d.Reason)
			}
			var tOne, tMany time.Duration
			for b.Loop() {
				start := time.Now()
				d, _ := ao.Decide(ctx, one.req)
				mid := time.Now()
				require.True(b, d.Allowed, d.Reason)
				d, _ = am.Decide(ctx, many.req)
				tOne, tMany = tOne+mid.Sub(start), tMany+time.Since(mid)
				require.True(b, d.Allowed, d.Reason)
			}
			reportRatio(b, tOne, tMany)
		})
	}
}

func reportRatio(b *testing.B, one, many time.Duration) {
	b.ReportMetric(float64(one.Nanoseconds())/float64(b.N), "one-ns/op")
	b.ReportMetric(float64(many.Nanoseconds())/float64(b.N), "many-ns/op")
	b.ReportMetric(float64(one)/float64(many), "one/many")
}

// TestPathsIngressIsBounded admits the 15,000-path Ingress at the
// production deadline: the admission returns — a verdict on the Ingress,
// or the deadline's own answer (timed out, busy), never a hang — alone and
// six at once, and the process's memory stays under the Helm chart's limit
// meanwhile. Whether it finishes in time is a benchmark's business
// (BenchmarkPathsPerIngress), not this test's: it depends on the machine.
func TestPathsIngressIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("renders and checks a 15,000-path Ingress")
	}
	limit := chartMemoryLimit(t)
	c := newPathsCase(t, 15000, true)
	// The embedded tests run once per config (the controller runs them when
	// it loads the config); then the admission proper, at the deadline.
	// The warm-up is not what is tested: it may take as long as the test
	// may run (under -race on a loaded machine, more than a minute).
	warmFor := 10 * time.Minute
	if end, ok := t.Deadline(); ok {
		warmFor = time.Until(end) - 30*time.Second
	}
	warm, _ := c.admitter().Decide(within(t, warmFor), c.req)
	require.True(t, warm.Allowed, warm.Reason)
	a := c.admitter() // its own: the warm-up's decision is not reused
	d, report := a.Decide(within(t, webhook.DefaultValidationTimeout), c.req)
	require.True(t, d.Allowed || (report.Verdict != nil && report.Verdict.TimedOut), "a verdict or a timeout, got %q", d.Reason)

	peak := watchMemory(t)
	var wg sync.WaitGroup
	type decision struct {
		admission.Decision
		admission.Report
	}
	decisions := make([]decision, 6)
	for i := range decisions {
		wg.Go(func() {
			decisions[i].Decision, decisions[i].Report = a.Decide(within(t, webhook.DefaultValidationTimeout), c.req)
		})
	}
	wg.Wait()
	heap, hwm := peak()
	t.Logf("6 parallel admissions: peak Go memory %d MiB (runtime/metrics), peak RSS %d MiB; chart limit %d MiB", heap>>20, hwm>>20, limit>>20)
	for _, d := range decisions {
		// A timeout is the verdict's, or, for a request that joined the
		// decision an identical one started and whose deadline came first,
		// its own (ReasonTimedOut: the rule for shared runs).
		assert.True(t, d.Allowed || d.Busy || d.Reason == admission.ReasonTimedOut || (d.Verdict != nil && d.Verdict.TimedOut),
			"a verdict, a timeout, or busy (checks in flight are bounded by the CPUs), got %q", d.Reason)
	}
	assert.Less(t, heap, limit, "Go memory (runtime/metrics)")
	if hwm > 0 {
		assert.Less(t, hwm, limit, "peak resident memory (VmHWM)")
	}
}

// chartMemoryLimit reads controller.resources.limits.memory from the
// chart's values.
func chartMemoryLimit(t *testing.T) uint64 {
	t.Helper()
	raw, err := os.ReadFile("../../charts/htc/values.yaml")
	require.NoError(t, err)
	var values struct {
		Controller struct {
			Resources struct {
				Limits struct {
					Memory string `json:"memory"`
				} `json:"limits"`
			} `json:"resources"`
		} `json:"controller"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &values))
	q, err := resource.ParseQuantity(values.Controller.Resources.Limits.Memory)
	require.NoError(t, err)
	require.Positive(t, q.Value())
	return uint64(q.Value())
}

// watchMemory samples the Go runtime's memory (mapped and not released to
// the OS, from runtime/metrics) until the returned function is called,
// which reports the largest sample and the process's peak resident memory
// since watchMemory was called (VmHWM, reset through clear_refs; 0 where
// that is unavailable). Sampling can miss a peak, never invent one; VmHWM
// is the kernel's own maximum.
func watchMemory(t *testing.T) func() (heap, hwm uint64) {
	t.Helper()
	runtime.GC()
	resetHWM := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	sample := func() {
		metrics.Read(samples)
		peak = max(peak, samples[0].Value.Uint64()-samples[1].Value.Uint64())
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(stop)
		<-done
		sample()
		if !resetHWM {
			return peak, 0
		}
		return peak, vmHWM(t)
	}
}

// vmHWM is the process's peak resident set size in bytes.
func vmHWM(t *testing.T) uint64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	return 0
}
