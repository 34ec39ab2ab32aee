package examples_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// BenchmarkGatewayRetainedHeap measures the heap the Gateway library keeps
// at rest over 10,000 HTTPRoutes (the objects of make bench-scale
// WORKLOAD=gateway: an app's Service, EndpointSlice and HTTPRoute on one
// Gateway): the stores, pruned and shared as the controller's informers
// keep them (dryrun.Pipeline.Keep, watched.ShareTable), and what one
// recording render of them (the live loop's) leaves: its bundle and the
// fragment records. It reports the live heap after a collection, in
// bytes per route (stores-B/route, render-B/route), and the heap's spans
// in use over the live heap then (inuse/live: how much the pages holding
// live objects hold besides them; RSS at rest is about the spans in use,
// as a forced collection returns only empty pages); HTC_HEAP_PROFILE=file
// also writes the heap profile then, HTC_HEAP_ROUTES=n takes n routes.
func BenchmarkGatewayRetainedHeap(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("HTC_HEAP_ROUTES")); err == nil && v > 0 {
		n = v // a quicker look
	}
	for b.Loop() {
		cfg, err := config.LoadFile("gateway/config.yaml")
		require.NoError(b, err)
		p, err := dryrun.Build(cfg, dryrun.Env{}) // what the stores keep (Keep)
		require.NoError(b, err)
		e, err := htcrender.New(&cfg.Spec)
		require.NoError(b, err)
		before := liveHeap()
		stores := prunedGatewayStores(b, p, n)
		storesHeap := liveHeap()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a busy machine
		bundle, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/etc/haproxy", Record: true})
		cancel()
		require.NoError(b, err)
		rendered := liveHeap()
		var m runtime.MemStats
		runtime.ReadMemStats(&m) // after liveHeap's collection
		if f := os.Getenv("HTC_HEAP_PROFILE"); f != "" {
			out, err := os.Create(f)
			require.NoError(b, err)
			require.NoError(b, pprof.Lookup("heap").WriteTo(out, 0))
			require.NoError(b, out.Close())
		}
		b.ReportMetric(float64(storesHeap-before)/float64(n), "stores-B/route")
		b.ReportMetric(float64(rendered-storesHeap)/float64(n), "render-B/route")
		b.ReportMetric(float64(m.HeapInuse)/float64(m.HeapAlloc), "inuse/live")
		runtime.KeepAlive(bundle)
		runtime.KeepAlive(stores)
		runtime.KeepAlive(e)
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// prunedGatewayStores holds n apps (testutil.ClusterApp's Service and
// EndpointSlice, an HTTPRoute each, ClusterHTTPRoute) and their Gateway
// (ClusterGateway), each object pruned and shared as an informer of the
// controller running p stores it.
func prunedGatewayStores(b *testing.B, p *dryrun.Pipeline, n int) map[string]*store.Store {
	stores := p.Model.NewStores()
	transforms := map[watched.WatchKey]func(any) (any, error){}
	add := func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
		for _, r := range p.Model.For(gvr) {
			k := r.WatchKey()
			tf := transforms[k]
			if tf == nil {
				tf = p.Keep(k).SharingTransform(watched.NewShareTable(0))
				transforms[k] = tf
			}
			pruned, err := tf(obj.DeepCopy())
			require.NoError(b, err)
			if u := pruned.(*unstructured.Unstructured); r.Selects(u) {
				require.NoError(b, stores[r.Key].Add(u))
			}
		}
	}
	gvr := func(group, resource string) schema.GroupVersionResource {
		v := "v1"
		return schema.GroupVersionResource{Group: group, Version: v, Resource: resource}
	}
	class, gw := testutil.ClusterGateway("htc-system", "gw", "htc")
	add(gvr("gateway.networking.k8s.io", "gatewayclasses"), class)
	add(gvr("gateway.networking.k8s.io", "gateways"), gw)
	for i := range n {
		svc, eps, _ := testutil.ClusterApp(i, false)
		add(gvr("", "services"), svc)
		add(gvr("discovery.k8s.io", "endpointslices"), eps)
		add(gvr("gateway.networking.k8s.io", "httproutes"), testutil.ClusterHTTPRoute(svc.GetNamespace(), svc.GetName(), svc.GetName(), "htc-system", "gw"))
	}
	return stores
}
