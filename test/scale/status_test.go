package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// statusBound bounds the wait for a controller's status writes after it is
// ready: the first controller writes a status document to every route (at
// its 50 writes per second, 10,000 take 200 s at best); later ones find
// them written.
const statusBound = 30 * time.Minute

// statusController is the controllerName of the gateway workload's class
// (testutil.ClusterGateway), which the library writes into each route's
// status.parents entry.
const statusController = "haproxy-template.io/htc"

// waitStatusWritten waits (bounded) until the API server holds what the
// controller's status writer reports for the gateway workload: every
// HTTPRoute with this controller's status.parents entry whose Accepted
// condition observed its generation, and the Gateway's listener counting
// all n of them. It returns how long that took from start (zero, at once,
// for a workload without status). Measuring admissions before then would
// measure the controller's first status writes (each one a watch event,
// a new live state and a new baseline) instead of admission.
func (h *harness) waitStatusWritten(start time.Time) time.Duration {
	if !h.s.workload.gateway {
		return 0
	}
	routes := h.watchRouteStatus()
	defer routes.stop()
	deadline := time.Now().Add(statusBound)
	var logged time.Time
	for {
		written, synced := routes.written()
		attached, gerr := h.gatewayAttached()
		if synced && gerr == nil && written == h.s.n && attached == h.s.n {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the controller wrote the status of %d of %d HTTPRoutes, and the Gateway counts %d attached routes, in %s (error: %v)",
				written, h.s.n, attached, statusBound, gerr)
		}
		if time.Since(logged) >= 5*time.Second {
			h.logf("status: %d of %d HTTPRoutes written, %d attached on the Gateway", written, h.s.n, attached)
			logged = time.Now()
		}
		h.checkCtx()
		time.Sleep(250 * time.Millisecond)
	}
}

// routeStatus counts, from a watch of the HTTPRoutes (an informer: one
// list, then events), those whose status this controller wrote
// (statusObserved). Listing 10,000 routes every few seconds instead cost
// the API server as much as the writes it waited for.
type routeStatus struct {
	inf      cache.SharedIndexInformer
	mu       sync.Mutex
	observed map[string]bool // namespace/name → statusObserved
	stop     context.CancelFunc
}

// watchRouteStatus starts a routeStatus; stop ends its watch.
func (h *harness) watchRouteStatus() *routeStatus {
	rs := &routeStatus{observed: map[string]bool{}}
	rs.inf = dynamicinformer.NewFilteredDynamicInformer(h.cluster.dyn, gvrHTTPRoute, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	set := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			rs.mu.Lock()
			rs.observed[u.GetNamespace()+"/"+u.GetName()] = statusObserved(u)
			rs.mu.Unlock()
		}
	}
	_, err := rs.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				rs.mu.Lock()
				delete(rs.observed, u.GetNamespace()+"/"+u.GetName())
				rs.mu.Unlock()
			}
		},
	})
	if err != nil {
		h.t.Fatalf("watching HTTPRoutes: %v", err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	rs.stop = cancel
	go rs.inf.Run(ctx.Done())
	return rs
}

// written is how many routes have this controller's status, and whether
// the watch has listed them all yet.
func (rs *routeStatus) written() (n int, synced bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, ok := range rs.observed {
		if ok {
			n++
		}
	}
	return n, rs.inf.HasSynced()
}

// statusObserved reports whether route's status.parents holds this
// controller's entry whose Accepted condition has the route's generation.
func statusObserved(route *unstructured.Unstructured) bool {
	parents, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		if pm == nil || pm["controllerName"] != statusController {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(pm, "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm != nil && cm["type"] == "Accepted" && fmt.Sprint(cm["observedGeneration"]) == fmt.Sprint(route.GetGeneration()) {
				return true
			}
		}
	}
	return false
}

// gatewayAttached is the attachedRoutes of the gateway workload's Gateway's
// first listener.
func (h *harness) gatewayAttached() (int, error) {
	gw, err := h.cluster.dyn.Resource(gvrGateway).Namespace(gatewayNamespace).Get(h.ctx, gatewayName, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading the Gateway: %w", err)
	}
	ls, _, _ := unstructured.NestedSlice(gw.Object, "status", "listeners")
	if len(ls) == 0 {
		return 0, nil
	}
	n, _, _ := unstructured.NestedInt64(ls[0].(map[string]any), "attachedRoutes")
	return int(n), nil
}
