package examples_test

import (
	"fmt"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// servedObjects says whether the heap benchmarks give their objects what
// the API server adds when it serves them (HTC_HEAP_SERVED=1, asServed):
// the cluster benchmarks' objects look so; the generated ones do not.
func servedObjects() bool { return os.Getenv("HTC_HEAP_SERVED") == "1" }

// asServed adds to obj, object seq of the benchmark, what the API server
// adds (when servedObjects): uid, resourceVersion, creationTimestamp,
// generation, a managedFields entry and the defaults of its kind; an
// HTTPRoute with status true also holds the status the controller writes
// (one parent, Accepted and ResolvedRefs). obj is changed and returned.
func asServed(obj *unstructured.Unstructured, seq int, status bool) *unstructured.Unstructured {
	if !servedObjects() {
		return obj
	}
	o := obj.Object
	md := o["metadata"].(map[string]any)
	md["uid"] = fmt.Sprintf("%08x-1d2c-4b7a-9c3e-%012x", seq, seq*7919)
	md["resourceVersion"] = strconv.Itoa(100000 + seq)
	stamp := fmt.Sprintf("2026-11-30T17:%02d:%02dZ", seq/200/60%60, seq/200%60) // about 200 objects a second
	md["creationTimestamp"] = stamp
	md["managedFields"] = []any{map[string]any{"manager": "bench", "operation": "Apply", "time": stamp,
		"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}}
	if o["kind"] != "Service" {
		md["generation"] = int64(1)
	}
	each := func(list any, f func(m map[string]any)) {
		l, _ := list.([]any)
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				f(m)
			}
		}
	}
	switch o["kind"] {
	case "Service":
		spec := o["spec"].(map[string]any)
		for k, v := range map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "internalTrafficPolicy": "Cluster",
			"ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "type": "ClusterIP"} {
			spec[k] = v
		}
		each(spec["ports"], func(p map[string]any) { p["protocol"] = "TCP" })
		o["status"] = map[string]any{"loadBalancer": map[string]any{}}
	case "EndpointSlice":
		each(o["ports"], func(p map[string]any) { p["protocol"] = "TCP" })
	case "HTTPRoute":
		spec := o["spec"].(map[string]any)
		each(spec["parentRefs"], func(p map[string]any) { p["group"], p["kind"] = "gateway.networking.k8s.io", "Gateway" })
		each(spec["rules"], func(r map[string]any) {
			each(r["backendRefs"], func(b map[string]any) { b["group"], b["kind"], b["weight"] = "", "Service", int64(1) })
		})
		if status {
			cond := func(t string) map[string]any {
				return map[string]any{"type": t, "status": "True", "reason": t, "message": "", "observedGeneration": int64(1),
					"lastTransitionTime": stamp}
			}
			o["status"] = map[string]any{"parents": []any{map[string]any{
				"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "htc-system"},
				"controllerName": "haproxy-template.io/htc",
				"conditions":     []any{cond("Accepted"), cond("ResolvedRefs")},
			}}}
			md["resourceVersion"] = strconv.Itoa(500000 + seq)
		}
	}
	return obj
}
