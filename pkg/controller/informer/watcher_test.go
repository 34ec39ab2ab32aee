package informer

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Start with namespaces lists and watches only those; without, it
// watches every namespace.
func TestWatcherNamespaces(t *testing.T) {
	objs := []runtime.Object{svc("a", "s1", "1"), svc("b", "s2", "1"), svc("c", "s3", "1")}
	spec := &config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{
		"services": {APIVersion: "v1", Resources: "services", IndexBy: []string{"metadata.namespace", "metadata.name"}},
	}}
	model, err := watched.New(spec)
	require.NoError(t, err)
	r, _ := model.Get("services")
	for _, tc := range []struct {
		name       string
		namespaces []string
		want       []string // namespace/name, sorted
	}{
		{"all", nil, []string{"a/s1", "b/s2", "c/s3"}},
		{"two", []string{"a", "c"}, []string{"a/s1", "c/s3"}},
		{"none there", []string{"d"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeClient(objs...)
			w, err := Start(t.Context(), dyn, r, tc.namespaces, nil, Updates{}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			defer w.Stop()
			require.Eventually(t, w.synced, 5*time.Second, 10*time.Millisecond)
			var got []string
			for _, o := range w.store.List() {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			}
			assert.ElementsMatch(t, tc.want, got)

			// A later object in a watched namespace arrives; one elsewhere does not.
			_, err = dyn.Resource(servicesGVR).Namespace("a").Create(t.Context(), svc("a", "late", "2"), metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = dyn.Resource(servicesGVR).Namespace("b").Create(t.Context(), svc("b", "late", "2"), metav1.CreateOptions{})
			require.NoError(t, err)
			watchesA := len(tc.namespaces) == 0 || tc.namespaces[0] == "a"
			if watchesA {
				require.Eventually(t, func() bool { _, ok := w.store.ByName("a", "late"); return ok }, 5*time.Second, 10*time.Millisecond)
			}
			if len(tc.namespaces) > 0 {
				time.Sleep(100 * time.Millisecond) // the watch of a would have delivered b's too by now
				_, ok := w.store.ByName("b", "late")
				assert.False(t, ok, "an object in an unwatched namespace never reaches the store")
			}
		})
	}
}

// The informers list and watch with the resource's label and field
// selectors, in every watched namespace.
func TestWatcherPassesSelectors(t *testing.T) {
	w := config.WatchedResource{APIVersion: "v1", Resources: "services", IndexBy: []string{"metadata.namespace", "metadata.name"},
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, FieldSelector: "metadata.name!=kubernetes"}
	model, err := watched.New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{"services": w}})
	require.NoError(t, err)
	r, _ := model.Get("services")
	dyn := fakeClient()
	var mu sync.Mutex
	seen := map[string]string{} // verb/namespace: label selector; field selector
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		var sel string
		switch a := a.(type) {
		case k8stesting.ListAction:
			sel = a.GetListRestrictions().Labels.String() + "; " + a.GetListRestrictions().Fields.String()
		case k8stesting.WatchAction:
			sel = a.GetWatchRestrictions().Labels.String() + "; " + a.GetWatchRestrictions().Fields.String()
		}
		mu.Lock()
		seen[a.GetVerb()+"/"+a.GetNamespace()] = sel
		mu.Unlock()
		return false, nil, nil
	}
	dyn.PrependReactor("list", "services", record)
	dyn.PrependWatchReactor("services", func(a k8stesting.Action) (bool, watch.Interface, error) {
		_, _, _ = record(a)
		return false, nil, nil
	})
	wt, err := Start(t.Context(), dyn, r, []string{"a", "b"}, nil, Updates{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer wt.Stop()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4
	}, 5*time.Second, 10*time.Millisecond, "a list and a watch per namespace")
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"list/a", "list/b", "watch/a", "watch/b"} {
		assert.Equal(t, "app=web; metadata.name!=kubernetes", seen[k], k)
	}
}

func TestStoreSinkSkipsUnchangedResourceVersion(t *testing.T) {
	st, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	sink := NewSink(st, Updates{}, slog.New(slog.DiscardHandler))
	a := svc("default", "a", "1")
	sink.OnAdd(a, false)
	same := svc("default", "a", "1")
	same.SetLabels(map[string]string{"changed": "but same resourceVersion"})
	sink.OnUpdate(a, same)
	got, ok := st.ByName("default", "a")
	require.True(t, ok)
	assert.Empty(t, got.GetLabels(), "an update with the same resourceVersion is a resync and is skipped")

	newer := svc("default", "a", "2")
	newer.SetLabels(map[string]string{"v": "2"})
	sink.OnUpdate(a, newer)
	got, _ = st.ByName("default", "a")
	assert.Equal(t, "2", got.GetLabels()["v"])

	sink.OnDelete(newer)
	assert.Equal(t, 0, st.Len())
}

var servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// svc is Service ns/name at resourceVersion rv.
func svc(ns, name, rv string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"namespace": ns, "name": name, "resourceVersion": rv},
		"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}},
	}}
}

// fakeClient is a dynamic client of Services holding objs.
func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{servicesGVR: "ServiceList"}, objs...)
}

// A watcher's share tables forget the parts they remember when told
// (ForgetShared, at the controller's idle memory return); its store keeps
// every object as it was.
func TestAWatcherForgetsTheSharedPartsItsTablesRemember(t *testing.T) {
	objs := []runtime.Object{svc("a", "s1", "1"), svc("a", "s2", "1")}
	for _, o := range objs {
		o.(*unstructured.Unstructured).SetLabels(map[string]string{"app": "0"}) // servicesBy's selector
	}
	w, err := Start(t.Context(), fakeClient(objs...), servicesBy(t, 1)[0], nil, nil, Updates{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer w.Stop()
	require.Eventually(t, w.Synced, 5*time.Second, 10*time.Millisecond)
	require.NotZero(t, w.SharedParts(), "the identical ports were shared")
	before := w.Store().List()
	require.Len(t, before, 2)
	w.ForgetShared()
	assert.Zero(t, w.SharedParts())
	assert.Equal(t, before, w.Store().List())
}
