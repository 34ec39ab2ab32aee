package controller

import (
	"context"
	"log/slog"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/controller/objstatus"
	"github.com/haproxy-template/htc/pkg/controller/objstatus/objstatustest"
)

// statusConfig is smallConfig with a resourceStatus template giving every
// Ingress the address 203.0.113.10 (ingresses with writeStatus).
func statusConfig(t *testing.T) *unstructured.Unstructured {
	cfg := smallConfig(t, false)
	require.NoError(t, unstructured.SetNestedField(cfg.Object, true, "spec", "watchedResources", "ingresses", "writeStatus"))
	require.NoError(t, unstructured.SetNestedField(cfg.Object, `{{- range $i := .resources.ingresses.List }}
---
{{ toJson (dict "apiVersion" "networking.k8s.io/v1" "kind" "Ingress" "metadata" (dict "namespace" $i.metadata.namespace "name" $i.metadata.name) "status" (dict "loadBalancer" (dict "ingress" (list (dict "ip" "203.0.113.10"))))) }}
{{- end }}`, "spec", "resourceStatus", "template"))
	return cfg
}

// Only the leader writes the status of watched objects, once, and a status
// that already holds the document is not written again.
func TestOnlyTheLeaderWritesObjectStatusOnce(t *testing.T) {
	needHAProxy(t)
	web := ingressObj("web", "echo")
	web.SetResourceVersion("1")
	dyn := fakeClient(svc("default", "echo", "1"), web, statusConfig(t))
	applied := objstatustest.ApplyStatus(t, dyn)
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc", LeaderElection: true}, slog.New(slog.DiscardHandler), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	writes := func(result string) float64 { return promtestutil.ToFloat64(c.objStatus.Writes.WithLabelValues(result)) }
	ingress := func() *unstructured.Unstructured {
		obj, err := dyn.Resource(ingressesGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return obj
	}

	require.Eventually(t, func() bool { return writes(objstatus.Follower) >= 1 }, 20*time.Second, 10*time.Millisecond, "the follower never had a batch")
	assert.Zero(t, applied.Load(), "a follower writes nothing")
	assert.NotContains(t, ingress().Object, "status")

	leading, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	go c.leader.Lead(leading, c.startedLeading)
	require.Eventually(t, func() bool { return writes(objstatus.Written) == 1 }, 20*time.Second, 10*time.Millisecond, "the leader never wrote the status")
	ips, _, _ := unstructured.NestedSlice(ingress().Object, "status", "loadBalancer", "ingress")
	assert.Equal(t, []any{map[string]any{"ip": "203.0.113.10"}}, ips)
	assert.Equal(t, "2", ingress().GetResourceVersion())

	// Another round (a Service is created): the status is there, nothing
	// is written. The write itself brought a round too (the Ingress's
	// resourceVersion changed).
	_, err := dyn.Resource(servicesGVR).Namespace("default").Create(ctx, svc("default", "other", "1"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return writes(objstatus.Unchanged) >= 1 }, 20*time.Second, 10*time.Millisecond, "no later round compared the status")
	assert.Equal(t, 1.0, writes(objstatus.Written), "an unchanged status is not written again")
	assert.Equal(t, int64(1), applied.Load())
	assert.Equal(t, "2", ingress().GetResourceVersion())
}
