package examples_test

import (
	"context"
	"encoding/json"
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
// fragment records; then what a second recording render leaves after
// every HTTPRoute was replaced by a copy (as the informers replace them
// when the controller writes their status), as the live loop keeps it:
// the engine's records and that render's bundle (again-B/route,
// again-inuse/live); then what the bundle of a full render that records
// nothing keeps beside them (full-B/route: the shadow checks render two
// such and keep the first while rendering the second, an admission keeps
// its own while it checks it). It reports the live heap after a collection, in
// bytes per route (stores-B/route, render-B/route), and the heap's spans
// in use over the live heap then (inuse/live: how much the pages holding
// live objects hold besides them; RSS at rest is about the spans in use,
// as a forced collection returns only empty pages); HTC_HEAP_PROFILE=file
// also writes the heap profile then (and file.again, file.full after the
// second and the full render), HTC_HEAP_ROUTES=n takes n routes.
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
		writeHeapProfile(b, "")
		runtime.KeepAlive(bundle) // measured above
		// The controller's live rounds render again after it wrote every
		// route's status (each route replaced by a copy), and keep only
		// that render's bundle beside the engine's records.
		replaceRoutes(b, p, stores)
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		bundle, err = e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/etc/haproxy", Record: true})
		cancel()
		require.NoError(b, err)
		again := liveHeap()
		var m2 runtime.MemStats
		runtime.ReadMemStats(&m2)
		writeHeapProfile(b, ".again")
		// A full render that records nothing (the shadow checks', which
		// keep one bundle while they render the next; an admission's)
		// leaves its bundle: what it keeps beside the live state.
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		full, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/etc/haproxy", Full: true})
		cancel()
		require.NoError(b, err)
		fullHeap := liveHeap()
		writeHeapProfile(b, ".full")
		runtime.KeepAlive(full)
		b.ReportMetric(float64(storesHeap-before)/float64(n), "stores-B/route")
		b.ReportMetric(float64(rendered-storesHeap)/float64(n), "render-B/route")
		b.ReportMetric(float64(m.HeapInuse)/float64(m.HeapAlloc), "inuse/live")
		b.ReportMetric(float64(again-storesHeap)/float64(n), "again-B/route")
		b.ReportMetric(float64(m2.HeapInuse)/float64(m2.HeapAlloc), "again-inuse/live")
		b.ReportMetric(float64(fullHeap-again)/float64(n), "full-B/route")
		runtime.KeepAlive(bundle)
		runtime.KeepAlive(stores)
		runtime.KeepAlive(e)
	}
}

// writeHeapProfile writes the heap profile to HTC_HEAP_PROFILE's file
// with suffix, when it is set.
func writeHeapProfile(b *testing.B, suffix string) {
	if f := os.Getenv("HTC_HEAP_PROFILE"); f != "" {
		out, err := os.Create(f + suffix)
		require.NoError(b, err)
		require.NoError(b, pprof.Lookup("heap").WriteTo(out, 0))
		require.NoError(b, out.Close())
	}
}

// replaceRoutes replaces every HTTPRoute in stores by a copy, pruned and
// shared as an informer of the controller running p keeps it, as the
// informers do when the controller wrote the routes' status.
func replaceRoutes(b *testing.B, p *dryrun.Pipeline, stores map[string]*store.Store) {
	replaceSomeRoutes(b, p, stores, 0, 1)
}

// replaceSomeRoutes is replaceRoutes for the part-th of parts equal
// parts of the HTTPRoutes (in the stores' order); with HTC_HEAP_SERVED=1
// each holds the status the controller wrote (asServed).
func replaceSomeRoutes(b *testing.B, p *dryrun.Pipeline, stores map[string]*store.Store, part, parts int) {
	gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	for _, r := range p.Model.For(gvr) {
		tf := p.Keep(r.WatchKey()).SharingTransform(watched.NewShareTable(0))
		all := stores[r.Key].List()
		for i, o := range all[part*len(all)/parts : (part+1)*len(all)/parts] {
			c, err := tf(decoded(b, asServed(o.DeepCopy(), part*len(all)/parts+i, true)))
			require.NoError(b, err)
			require.NoError(b, stores[r.Key].Update(c.(*unstructured.Unstructured)))
		}
	}
}

// decoded is obj as an informer receives it: encoded to JSON by the API
// server and decoded (unstructured.Unstructured.UnmarshalJSON, the
// informers' decoder), every map, list and scalar a new allocation.
func decoded(b *testing.B, obj *unstructured.Unstructured) *unstructured.Unstructured {
	data, err := json.Marshal(obj.Object)
	require.NoError(b, err)
	out := &unstructured.Unstructured{}
	require.NoError(b, out.UnmarshalJSON(data))
	return out
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
// controller running p stores it (listed: transformed twice); as the API
// server serves them with HTC_HEAP_SERVED=1 (asServed).
func prunedGatewayStores(b *testing.B, p *dryrun.Pipeline, n int) map[string]*store.Store {
	return prunedGatewayTLSStores(b, p, n, 0)
}

// prunedGatewayTLSStores is prunedGatewayStores with, for the first tls
// apps, bench-scale's gateway-tls objects too (ClusterTLSPassthrough: a
// ListenerSet with one TLS Passthrough listener and a TLSRoute on it),
// the Gateway then admitting ListenerSets of every namespace.
func prunedGatewayTLSStores(b *testing.B, p *dryrun.Pipeline, n, tls int) map[string]*store.Store {
	stores := p.Model.NewStores()
	transforms := map[watched.WatchKey]func(any) (any, error){}
	seq := 0
	add := func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
		seq++
		asServed(obj, seq, false)
		for _, r := range p.Model.For(gvr) {
			k := r.WatchKey()
			tf := transforms[k]
			if tf == nil {
				tf = p.Keep(k).SharingTransform(watched.NewShareTable(0))
				transforms[k] = tf
			}
			// A listed object passes the informer's transform twice:
			// the reflector's watch-list (or listPruned's page) and
			// the FIFO's Replace (client-go's RealFIFO) each run it.
			pruned, err := tf(decoded(b, obj))
			require.NoError(b, err)
			pruned, err = tf(pruned)
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
	if tls > 0 {
		require.NoError(b, unstructured.SetNestedMap(gw.Object, map[string]any{"namespaces": map[string]any{"from": "All"}}, "spec", "allowedListeners"))
	}
	add(gvr("gateway.networking.k8s.io", "gatewayclasses"), class)
	add(gvr("gateway.networking.k8s.io", "gateways"), gw)
	for i := range n {
		svc, eps, _ := testutil.ClusterApp(i, false)
		add(gvr("", "services"), svc)
		add(gvr("discovery.k8s.io", "endpointslices"), eps)
		add(gvr("gateway.networking.k8s.io", "httproutes"), testutil.ClusterHTTPRoute(svc.GetNamespace(), svc.GetName(), svc.GetName(), "htc-system", "gw"))
	}
	for i := range min(n, tls) { // after the apps, as bench-scale loads them
		svc, _, _ := testutil.ClusterApp(i, false)
		ls, tr := testutil.ClusterTLSPassthrough(svc.GetNamespace(), svc.GetName(), svc.GetName(), "htc-system", "gw")
		add(gvr("gateway.networking.k8s.io", "listenersets"), ls)
		add(gvr("gateway.networking.k8s.io", "tlsroutes"), tr)
	}
	return stores
}
