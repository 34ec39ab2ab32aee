package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// applyStatus makes dyn answer a server-side apply of an Ingress's status
// as the API server does for htc's documents: the resourceVersion is a
// precondition (a Conflict when it is stale), the applied status fields
// replace the object's, and the resourceVersion grows. It returns the
// number of applies that reached the object.
func applyStatus(t *testing.T, dyn interface {
	PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	Tracker() clienttesting.ObjectTracker
}) *atomic.Int64 {
	var applied atomic.Int64
	dyn.PrependReactor("patch", "ingresses", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		if p.GetSubresource() != "status" || p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		var patch unstructured.Unstructured
		require.NoError(t, json.Unmarshal(p.GetPatch(), &patch.Object))
		cur, err := dyn.Tracker().Get(ingressesGVR, p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		obj := cur.(*unstructured.Unstructured).DeepCopy()
		if rv := patch.GetResourceVersion(); rv != "" && rv != obj.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, p.GetName(), nil)
		}
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range patch.Object["status"].(map[string]any) {
			status[k] = v
		}
		obj.Object["status"] = status
		rv, _ := strconv.Atoi(obj.GetResourceVersion())
		obj.SetResourceVersion(strconv.Itoa(rv + 1))
		require.NoError(t, dyn.Tracker().Update(ingressesGVR, obj, p.GetNamespace()))
		applied.Add(1)
		return true, obj, nil
	})
	return &applied
}

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
	applied := applyStatus(t, dyn)
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc", LeaderElection: true}, slog.New(slog.DiscardHandler), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	writes := func(result string) float64 { return promtestutil.ToFloat64(c.objStatus.writes.WithLabelValues(result)) }
	ingress := func() *unstructured.Unstructured {
		obj, err := dyn.Resource(ingressesGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		return obj
	}

	require.Eventually(t, func() bool { return writes(objFollower) >= 1 }, 20*time.Second, 10*time.Millisecond, "the follower never had a batch")
	assert.Zero(t, applied.Load(), "a follower writes nothing")
	assert.NotContains(t, ingress().Object, "status")

	leading, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	go c.leader.lead(leading, c.startedLeading)
	require.Eventually(t, func() bool { return writes(objWritten) == 1 }, 20*time.Second, 10*time.Millisecond, "the leader never wrote the status")
	ips, _, _ := unstructured.NestedSlice(ingress().Object, "status", "loadBalancer", "ingress")
	assert.Equal(t, []any{map[string]any{"ip": "203.0.113.10"}}, ips)
	assert.Equal(t, "2", ingress().GetResourceVersion())

	// Another round (a Service is created): the status is there, nothing
	// is written. The write itself brought a round too (the Ingress's
	// resourceVersion changed).
	_, err := dyn.Resource(servicesGVR).Namespace("default").Create(ctx, svc("default", "other", "1"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return writes(objUnchanged) >= 1 }, 20*time.Second, 10*time.Millisecond, "no later round compared the status")
	assert.Equal(t, 1.0, writes(objWritten), "an unchanged status is not written again")
	assert.Equal(t, int64(1), applied.Load())
	assert.Equal(t, "2", ingress().GetResourceVersion())
}

// newWriterFixture is a writer over one store holding web, leading or not.
func newWriterFixture(t *testing.T, leading bool, objs ...runtime.Object) (*objectStatusWriter, *statusBatch, *atomic.Int64) {
	t.Helper()
	dyn := fakeClient(objs...)
	applied := applyStatus(t, dyn)
	st, err := store.New(nsName)
	require.NoError(t, err)
	for _, o := range objs {
		require.NoError(t, st.Add(o.(*unstructured.Unstructured)))
	}
	w := newObjectStatusWriter(dyn, func() bool { return leading }, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	w.now = func() time.Time { return time.Date(2026, 3, 3, 3, 3, 3, 0, time.UTC) }
	docs, err := resourcestatus.Parse(`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web},
  status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}, conditions: [{type: Served, status: "True"}]}}`)
	require.NoError(t, err)
	docs[0].Store = "ingresses"
	return w, &statusBatch{docs: docs, stores: map[string]*store.Store{"ingresses": st}, gvrs: map[string]schema.GroupVersionResource{"ingresses": ingressesGVR}}, applied
}

var nsName = []string{"metadata.namespace", "metadata.name"}

func TestObjectStatusWriterResults(t *testing.T) {
	withStatus := func(rv string, status map[string]any) *unstructured.Unstructured {
		o := ingressObj("web", "echo")
		o.SetResourceVersion(rv)
		if status != nil {
			o.Object["status"] = status
		}
		return o
	}
	held := map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.10"}}},
		"conditions": []any{map[string]any{"type": "Served", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	for _, tc := range []struct {
		name    string
		leading bool
		stored  *unstructured.Unstructured // in the store (the render's state)
		server  *unstructured.Unstructured // in the API server
		result  string
		applied int64
		failed  bool
	}{
		{"a new status is written", true, withStatus("1", nil), withStatus("1", nil), objWritten, 1, false},
		{"a status already held is not", true, withStatus("1", held), withStatus("1", held), objUnchanged, 0, false},
		{"a stale object conflicts", true, withStatus("1", nil), withStatus("2", nil), objConflict, 0, true},
		{"a follower writes nothing", false, withStatus("1", nil), withStatus("1", nil), objFollower, 0, false},
		{"a deleted object is gone", true, nil, withStatus("1", nil), objGone, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, b, applied := newWriterFixture(t, tc.leading, tc.server)
			if tc.stored == nil {
				b.stores["ingresses"].DeleteByName("default", "web")
			} else {
				require.NoError(t, b.stores["ingresses"].Add(tc.stored))
			}
			w.offer(b)
			_, gen := w.newest()
			assert.Equal(t, tc.failed, w.write(t.Context(), b, gen))
			assert.Equal(t, 1.0, promtestutil.ToFloat64(w.writes.WithLabelValues(tc.result)))
			assert.Equal(t, tc.applied, applied.Load())
		})
	}
}

// A written condition gets the time of the write, or keeps the object's
// when its status did not change.
func TestObjectStatusWriterFillsTransitionTimes(t *testing.T) {
	o := ingressObj("web", "echo")
	o.SetResourceVersion("1")
	o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Served", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	w, b, _ := newWriterFixture(t, true, o)
	w.offer(b)
	_, gen := w.newest()
	require.False(t, w.write(t.Context(), b, gen))
	got, err := w.dyn.Resource(ingressesGVR).Namespace("default").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Equal(t, []any{map[string]any{"type": "Served", "status": "True", "lastTransitionTime": "2026-03-03T03:03:03Z"}}, conds)
}

// A status write RBAC forbids is logged as an error naming the object and
// the grant it lacks, counted as forbidden, and not retried (write reports
// no failure, so no back-off timer loops on it).
func TestObjectStatusWriterForbiddenIsNotRetried(t *testing.T) {
	o := ingressObj("web", "echo")
	o.SetResourceVersion("1")
	w, b, applied := newWriterFixture(t, true, o)
	var logs strings.Builder
	w.log = slog.New(slog.NewTextHandler(&logs, nil))
	w.dyn.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "ingresses", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses/status"}, "web", errors.New("RBAC: no patch"))
	})
	w.offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen), "not retried")
	assert.Equal(t, 1.0, promtestutil.ToFloat64(w.writes.WithLabelValues(objForbidden)))
	assert.Equal(t, 0.0, promtestutil.ToFloat64(w.writes.WithLabelValues(objError)))
	assert.Zero(t, applied.Load())
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), "object=\"Ingress default/web\" resource=ingresses.networking.k8s.io/status")
}

// manyWriterFixture is newWriterFixture with n Ingresses web0..web<n-1>
// and a document for each; gate (if any) runs in each status apply before
// it reaches the fake client (which runs its reactors one at a time).
func manyWriterFixture(t *testing.T, leading bool, n int, gate func()) (*objectStatusWriter, *statusBatch, *atomic.Int64) {
	t.Helper()
	var objs []runtime.Object
	var text strings.Builder
	for i := range n {
		o := ingressObj(fmt.Sprintf("web%d", i), "echo")
		o.SetResourceVersion("1")
		objs = append(objs, o)
		fmt.Fprintf(&text, "---\n{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web%d}, status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}}\n", i)
	}
	w, b, applied := newWriterFixture(t, leading, objs...)
	if gate != nil {
		w.dyn = gatedDynamic{Interface: w.dyn, gate: gate}
	}
	docs, err := resourcestatus.Parse(text.String())
	require.NoError(t, err)
	for i := range docs {
		docs[i].Store = "ingresses"
	}
	b.docs = docs
	return w, b, applied
}

// gatedDynamic runs gate at the start of every ApplyStatus.
type gatedDynamic struct {
	dynamic.Interface
	gate func()
}

func (g gatedDynamic) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return gatedResource{NamespaceableResourceInterface: g.Interface.Resource(r), gate: g.gate}
}

type gatedResource struct {
	dynamic.NamespaceableResourceInterface
	gate func()
}

func (g gatedResource) Namespace(ns string) dynamic.ResourceInterface {
	return gatedNamespace{ResourceInterface: g.NamespaceableResourceInterface.Namespace(ns), gate: g.gate}
}

type gatedNamespace struct {
	dynamic.ResourceInterface
	gate func()
}

func (g gatedNamespace) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	g.gate()
	return g.ResourceInterface.ApplyStatus(ctx, name, obj, opts)
}

// The writer has statusWriters writes in flight at once: each of the first
// statusWriters applies waits until all of them have started.
func TestObjectStatusWriterWritesSeveralAtOnce(t *testing.T) {
	const n = 3 * statusWriters
	var started, inFlight, most atomic.Int64
	all := make(chan struct{})
	gate := func() {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		if started.Add(1) == statusWriters {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(2 * time.Second): // a bound: reached only when writes run one at a time
		}
	}
	w, b, applied := manyWriterFixture(t, true, n, gate)
	w.offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen))
	assert.Equal(t, int64(statusWriters), most.Load(), "writes in flight at once")
	assert.Equal(t, int64(n), applied.Load())
	assert.Equal(t, float64(n), promtestutil.ToFloat64(w.writes.WithLabelValues(objWritten)))
}

// A follower counts every document of the batch as not_leader, once.
func TestObjectStatusWriterFollowerCountsEveryDocument(t *testing.T) {
	const n = 3 * statusWriters
	w, b, applied := manyWriterFixture(t, false, n, nil)
	w.offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen))
	assert.Zero(t, applied.Load())
	assert.Equal(t, float64(n), promtestutil.ToFloat64(w.writes.WithLabelValues(objFollower)))
}
