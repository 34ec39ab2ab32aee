package examples_test

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkGatewayHeapAtRest measures what the controller's heap keeps
// resident at rest over 10,000 HTTPRoutes (HTC_HEAP_ROUTES=n takes n): the
// stores as the informers keep them (prunedGatewayStores: each object
// decoded from JSON and transformed as an informer does; HTC_HEAP_SERVED=1
// gives them what the API server adds, asServed), a recording
// render, every HTTPRoute replaced by a copy (as after the status writes),
// a second recording render, then a collection and a return of every free
// page to the system (runtime.GC, debug.FreeOSMemory: the controller's
// idle memory return). It reports, in bytes per route, the heap's spans
// in use then (rest-spans-B/route: the objects' bytes and the free room in
// spans holding one, /memory/classes/heap/objects + /memory/classes/heap/unused,
// what no return can give back: the heap's part of the RSS at rest) and the live heap
// (rest-live-B/route), and both in MB; and the spans in use, read
// likewise, after the stores were filled (stores-spans-MB), after the first
// render (first-spans-MB) and after the routes were replaced
// (replaced-spans-MB). HTC_HEAP_PROFILE=file writes the heap profile at
// rest to file.rest. HTC_HEAP_BATCHES=k replaces the routes in k batches
// with a recording render after each but the last, as the controller's
// live rounds follow its status writes (about a thousand routes a round
// at 10,000): a table then reuses most records of the last one; each of
// those renders is followed by a collection, as the controller's status
// writer collects before a batch of many writes (objstatus collectBefore).
func BenchmarkGatewayHeapAtRest(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("HTC_HEAP_ROUTES")); err == nil && v > 0 {
		n = v
	}
	batches := 1
	if v, err := strconv.Atoi(os.Getenv("HTC_HEAP_BATCHES")); err == nil && v > 0 {
		batches = v
	}
	for b.Loop() {
		cfg, err := config.LoadFile("gateway/config.yaml")
		require.NoError(b, err)
		p, err := dryrun.Build(cfg, dryrun.Env{})
		require.NoError(b, err)
		e, err := htcrender.New(&cfg.Spec)
		require.NoError(b, err)
		stores := prunedGatewayStores(b, p, n)
		storesSpans, _ := heapAtRest()
		render := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a busy machine
			defer cancel()
			bundle, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/etc/haproxy", Record: true})
			require.NoError(b, err)
			runtime.KeepAlive(bundle)
			runtime.GC() // the status writer's collection before a large batch
		}
		render()
		firstSpans, _ := heapAtRest()
		for part := range batches {
			if part > 0 {
				render() // a live round between two batches of status writes
			}
			replaceSomeRoutes(b, p, stores, part, batches)
		}
		replacedSpans, _ := heapAtRest()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		bundle, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/etc/haproxy", Record: true})
		cancel()
		require.NoError(b, err)
		spans, live := heapAtRest()
		writeHeapProfile(b, ".rest")
		b.ReportMetric(float64(spans)/float64(n), "rest-spans-B/route")
		b.ReportMetric(float64(live)/float64(n), "rest-live-B/route")
		b.ReportMetric(float64(spans)/1e6, "rest-spans-MB")
		b.ReportMetric(float64(live)/1e6, "rest-live-MB")
		b.ReportMetric(float64(storesSpans)/1e6, "stores-spans-MB")
		b.ReportMetric(float64(firstSpans)/1e6, "first-spans-MB")
		b.ReportMetric(float64(replacedSpans)/1e6, "replaced-spans-MB")
		runtime.KeepAlive(bundle)
		runtime.KeepAlive(stores)
		runtime.KeepAlive(e)
	}
}

// heapAtRest collects, returns every free page to the system and reads
// the heap's spans in use (objects and the free room in their spans) and
// its live objects' bytes.
func heapAtRest() (spans, live uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64(), s[0].Value.Uint64()
}
