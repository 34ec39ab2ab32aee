package controller

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/watched"
)

// startWatcher with namespaces lists and watches only those; without, it
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
			w, err := startWatcher(t.Context(), dyn, r, tc.namespaces, nil, nil, nil, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			defer w.stop()
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

func TestWatchNamespacesByScope(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		gvr        schema.GroupVersionResource
		want       []string
		wantErr    string
	}{
		{"all", nil, servicesGVR, nil, ""},
		{"namespaced", []string{"a", "b"}, servicesGVR, []string{"a", "b"}, ""},
		{"cluster-scoped", []string{"a"}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}, nil, ""},
		{"unknown", []string{"a"}, schema.GroupVersionResource{Version: "v1", Resource: "nothings"}, nil, "is nothings.v1 namespaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := restMapper().(*meta.DefaultRESTMapper)
			m.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"}, meta.RESTScopeRoot)
			c := newController(Options{WatchNamespaces: tc.namespaces}, slog.New(slog.DiscardHandler), fakeClient(), m, nil)
			got, err := c.watchNamespaces(tc.gvr)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
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
	wt, err := startWatcher(t.Context(), dyn, r, []string{"a", "b"}, nil, nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer wt.stop()
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
