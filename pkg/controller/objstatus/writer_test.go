package objstatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/pkg/controller/objstatus/objstatustest"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// ingressesGVR is the resource of the fixtures' documents.
var ingressesGVR = objstatustest.IngressesGVR

// fakeClient is a fake dynamic client that lists Ingresses.
func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ingressesGVR: "IngressList",
	}, objs...)
}

// ingressObj is an Ingress default/name (the writer reads no spec).
func ingressObj(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"namespace": "default", "name": name},
	}}
}

// newWriterFixture is a writer over one store holding web, leading or not.
func newWriterFixture(t *testing.T, leading bool, objs ...runtime.Object) (*Writer, *Batch, *atomic.Int64) {
	t.Helper()
	dyn := fakeClient(objs...)
	applied := objstatustest.ApplyStatus(t, dyn)
	st, err := store.New(nsName)
	require.NoError(t, err)
	for _, o := range objs {
		require.NoError(t, st.Add(o.(*unstructured.Unstructured)))
	}
	w := New(dyn, func() bool { return leading }, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	w.now = func() time.Time { return time.Date(2026, 3, 3, 3, 3, 3, 0, time.UTC) }
	docs, err := resourcestatus.Parse(`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web},
  status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}, conditions: [{type: Served, status: "True"}]}}`)
	require.NoError(t, err)
	docs[0].Store, docs[0].ResourceVersion = "ingresses", "1" // rendered from web at resourceVersion 1
	return w, &Batch{docs: docs, stores: map[string]*store.Store{"ingresses": st}, gvrs: map[string]schema.GroupVersionResource{"ingresses": ingressesGVR}}, applied
}

var nsName = []string{"metadata.namespace", "metadata.name"}

func TestObjectStatusWriterResults(t *testing.T) {
	withStatus := func(rv string, status map[string]any) *unstructured.Unstructured {
		o := ingressObj("web")
		o.SetResourceVersion(rv)
		if status != nil {
			o.Object["status"] = status
		}
		return o
	}
	held := map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.10"}}},
		"conditions": []any{map[string]any{"type": "Served", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	// Another controller's entry, added to the object after the render
	// read it (resourceVersion 1): a write of the document would drop it.
	theirs := map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"hostname": "theirs.example"}}}}
	for _, tc := range []struct {
		name    string
		leading bool
		stored  *unstructured.Unstructured // in the store at write time (the render read resourceVersion 1)
		server  *unstructured.Unstructured // in the API server
		result  string
		applied int64
		failed  bool
		stale   int // calls of Writer.Stale: a round asked for
	}{
		{"a new status is written", true, withStatus("1", nil), withStatus("1", nil), Written, 1, false, 0},
		{"a status already held is not", true, withStatus("1", held), withStatus("1", held), Unchanged, 0, false, 0},
		{"an object the API server changed since conflicts", true, withStatus("1", nil), withStatus("2", nil), Conflict, 0, true, 0},
		{"an object the informer replaced since the render is not written, and a round is asked for", true, withStatus("2", theirs), withStatus("2", theirs), Conflict, 0, true, 1},
		{"a newer object that already holds the document is left alone", true, withStatus("2", held), withStatus("2", held), Unchanged, 0, false, 0},
		{"a follower writes nothing", false, withStatus("1", nil), withStatus("1", nil), Follower, 0, false, 0},
		{"a deleted object is gone", true, nil, withStatus("1", nil), Gone, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, b, applied := newWriterFixture(t, tc.leading, tc.server)
			var stale int
			w.Stale = func() { stale++ }
			if tc.stored == nil {
				b.stores["ingresses"].DeleteByName("default", "web")
			} else {
				require.NoError(t, b.stores["ingresses"].Add(tc.stored))
			}
			w.Offer(b)
			_, gen := w.newest()
			assert.Equal(t, tc.failed, w.write(t.Context(), b, gen))
			assert.Equal(t, 1.0, promtestutil.ToFloat64(w.Writes.WithLabelValues(tc.result)))
			assert.Equal(t, tc.applied, applied.Load())
			assert.Equal(t, tc.stale, stale)
			if tc.server != nil {
				got, err := w.Client.Resource(ingressesGVR).Namespace("default").Get(t.Context(), "web", metav1.GetOptions{})
				require.NoError(t, err)
				if tc.applied == 0 {
					assert.Equal(t, tc.server.Object["status"], got.Object["status"], "a status not written is the server's as it was")
				}
			}
		})
	}
}

// A written condition gets the time of the write, or keeps the object's
// when its status did not change.
func TestObjectStatusWriterFillsTransitionTimes(t *testing.T) {
	o := ingressObj("web")
	o.SetResourceVersion("1")
	o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Served", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	w, b, _ := newWriterFixture(t, true, o)
	w.Offer(b)
	_, gen := w.newest()
	require.False(t, w.write(t.Context(), b, gen))
	got, err := w.Client.Resource(ingressesGVR).Namespace("default").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Equal(t, []any{map[string]any{"type": "Served", "status": "True", "lastTransitionTime": "2026-03-03T03:03:03Z"}}, conds)
}

// A status write RBAC forbids is logged as an error naming the object and
// the grant it lacks, counted as forbidden, and not retried (write reports
// no failure, so no back-off timer loops on it).
func TestObjectStatusWriterForbiddenIsNotRetried(t *testing.T) {
	o := ingressObj("web")
	o.SetResourceVersion("1")
	w, b, applied := newWriterFixture(t, true, o)
	var logs strings.Builder
	w.log = slog.New(slog.NewTextHandler(&logs, nil))
	w.Client.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "ingresses", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses/status"}, "web", errors.New("RBAC: no patch"))
	})
	w.Offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen), "not retried")
	assert.Equal(t, 1.0, promtestutil.ToFloat64(w.Writes.WithLabelValues(Forbidden)))
	assert.Equal(t, 0.0, promtestutil.ToFloat64(w.Writes.WithLabelValues(Failed)))
	assert.Zero(t, applied.Load())
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), "object=\"Ingress default/web\" resource=ingresses.networking.k8s.io/status")
}

// manyWriterFixture is newWriterFixture with n Ingresses web0..web<n-1>
// and a document for each; gate (if any) runs in each status apply before
// it reaches the fake client (which runs its reactors one at a time).
func manyWriterFixture(t *testing.T, leading bool, n int, gate func()) (*Writer, *Batch, *atomic.Int64) {
	t.Helper()
	var objs []runtime.Object
	var text strings.Builder
	for i := range n {
		o := ingressObj(fmt.Sprintf("web%d", i))
		o.SetResourceVersion("1")
		objs = append(objs, o)
		fmt.Fprintf(&text, "---\n{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: default, name: web%d}, status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}}\n", i)
	}
	w, b, applied := newWriterFixture(t, leading, objs...)
	if gate != nil {
		w.Client = gatedDynamic{Interface: w.Client, gate: gate}
	}
	docs, err := resourcestatus.Parse(text.String())
	require.NoError(t, err)
	for i := range docs {
		docs[i].Store, docs[i].ResourceVersion = "ingresses", "1"
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
	w.Offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen))
	assert.Equal(t, int64(statusWriters), most.Load(), "writes in flight at once")
	assert.Equal(t, int64(n), applied.Load())
	assert.Equal(t, float64(n), promtestutil.ToFloat64(w.Writes.WithLabelValues(Written)))
}

// A follower counts every document of the batch as not_leader, once.
func TestObjectStatusWriterFollowerCountsEveryDocument(t *testing.T) {
	const n = 3 * statusWriters
	w, b, applied := manyWriterFixture(t, false, n, nil)
	w.Offer(b)
	_, gen := w.newest()
	assert.False(t, w.write(t.Context(), b, gen))
	assert.Zero(t, applied.Load())
	assert.Equal(t, float64(n), promtestutil.ToFloat64(w.Writes.WithLabelValues(Follower)))
}

// A batch with collectBefore documents or more to write collects the
// garbage once before writing them; one with fewer, or whose objects
// already have their status, does not; a follower writes nothing and
// does not collect.
func TestObjectStatusWriterCollectsBeforeALargeBatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		docs      int
		leading   bool
		satisfied bool
		collected int64
	}{
		{name: "as many as collectBefore to write", docs: collectBefore, leading: true, collected: 1},
		{name: "fewer to write", docs: collectBefore - 1, leading: true},
		{name: "every object already has its status", docs: collectBefore, leading: true, satisfied: true},
		{name: "a follower", docs: collectBefore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, b, applied := manyWriterFixture(t, tc.leading, tc.docs, nil)
			if tc.satisfied {
				for i := range b.docs {
					d := &b.docs[i]
					obj, ok := b.stores[d.Store].ByName(d.Namespace, d.Name)
					require.True(t, ok)
					obj.Object["status"] = d.Status
				}
			}
			var collected atomic.Int64
			w.Collect = func() {
				assert.Zero(t, applied.Load(), "collected before the first write")
				collected.Add(1)
			}
			w.Offer(b)
			_, gen := w.newest()
			w.write(t.Context(), b, gen)
			assert.Equal(t, tc.collected, collected.Load())
		})
	}
}
