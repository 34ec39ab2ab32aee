package scale

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	if !h.s.workload.gateway() {
		return 0
	}
	deadline := time.Now().Add(statusBound)
	for {
		written, err := h.routesWithStatus()
		attached, gerr := h.gatewayAttached()
		if err == nil && gerr == nil && written == h.s.n && attached == h.s.n {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the controller wrote the status of %d of %d HTTPRoutes, and the Gateway counts %d attached routes, in %s (errors: %v, %v)",
				written, h.s.n, attached, statusBound, err, gerr)
		}
		h.logf("status: %d of %d HTTPRoutes written, %d attached on the Gateway", written, h.s.n, attached)
		h.checkCtx()
		time.Sleep(5 * time.Second)
	}
}

// routesWithStatus counts the HTTPRoutes whose status.parents has this
// controller's entry with Accepted observed at the route's generation.
func (h *harness) routesWithStatus() (int, error) {
	n, cont := 0, ""
	for {
		list, err := h.cluster.dyn.Resource(gvrHTTPRoute).List(h.ctx, metav1.ListOptions{Limit: 2000, Continue: cont})
		if err != nil {
			return n, fmt.Errorf("listing HTTPRoutes: %w", err)
		}
		for i := range list.Items {
			if statusObserved(&list.Items[i]) {
				n++
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
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
