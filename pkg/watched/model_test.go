package watched

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

var (
	servicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
)

func watchedResource(apiVersion, resources string, webhook bool) config.WatchedResource {
	return config.WatchedResource{APIVersion: apiVersion, Resources: resources, IndexBy: []string{"metadata.namespace", "metadata.name"}, WebhookValidation: webhook}
}

// testModel watches Ingresses (checked), all Services, and the Services
// labelled routed=yes a second time.
func testModel(t *testing.T) *Model {
	t.Helper()
	routed := watchedResource("v1", "services", true)
	routed.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"routed": "yes"}}
	m, err := New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
		"services":  watchedResource("v1", "services", false),
		"routed":    routed,
	}})
	require.NoError(t, err)
	return m
}

func object(apiVersion, kind, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace("default")
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func keys(rs []Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key)
	}
	return out
}

func TestModelAnswers(t *testing.T) {
	m := testModel(t)
	assert.Equal(t, []string{"ingresses", "routed", "services"}, m.Keys())
	assert.Equal(t, []string{"routed", "services"}, keys(m.For(servicesGVR)), "one resource watched twice")
	assert.Equal(t, []string{"ingresses"}, keys(m.For(ingressesGVR)))
	assert.Empty(t, m.For(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}))
	assert.Empty(t, m.For(schema.GroupVersionResource{Group: "extensions", Version: "v1beta1", Resource: "ingresses"}), "another group/version is another resource")
	assert.Empty(t, m.For(schema.GroupVersionResource{Version: "v1", Resource: "service"}), "never guessed from a singular or a Kind")
	assert.Equal(t, []string{"ingresses", "routed"}, keys(m.Checked()))

	r, ok := m.Get("routed")
	require.True(t, ok)
	assert.Equal(t, AdmissionDeny, r.Admission)
	assert.True(t, r.Selects(object("v1", "Service", "a", map[string]string{"routed": "yes"})))
	assert.False(t, r.Selects(object("v1", "Service", "a", nil)))
	assert.False(t, r.Selects(nil))
	s, _ := m.Get("services")
	assert.False(t, s.Checked())
	warn := watchedResource("v1", "secrets", true)
	warn.ValidationAction = config.ValidationWarn
	wm, err := New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{"secrets": warn}})
	require.NoError(t, err)
	ws, _ := wm.Get("secrets")
	assert.Equal(t, AdmissionWarn, ws.Admission)
	assert.True(t, ws.Checked())
	assert.True(t, s.Selects(object("v1", "Service", "a", nil)), "no selector selects everything")

	stores := m.NewStores()
	assert.Len(t, stores, 3)
	added, err := m.Add(stores, servicesGVR, object("v1", "Service", "a", map[string]string{"routed": "yes"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"routed", "services"}, added)
	added, err = m.Add(stores, servicesGVR, object("v1", "Service", "b", nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"services"}, added)
	assert.Equal(t, 1, stores["routed"].Len())
	assert.Equal(t, 2, stores["services"].Len())
}

func TestNewNamesTheField(t *testing.T) {
	for name, tc := range map[string]struct {
		w    config.WatchedResource
		want string
	}{
		"apiVersion":    {config.WatchedResource{APIVersion: "a/b/c", Resources: "x", IndexBy: []string{"metadata.name"}}, `spec.watchedResources[bad].apiVersion: "a/b/c"`},
		"indexBy":       {config.WatchedResource{APIVersion: "v1", Resources: "x", IndexBy: []string{"metadata.["}}, "spec.watchedResources[bad].indexBy"},
		"fieldSelector": {config.WatchedResource{APIVersion: "v1", Resources: "x", IndexBy: []string{"metadata.name"}, FieldSelector: "metadata.name"}, "spec.watchedResources[bad].fieldSelector"},
		"labelSelector": {config.WatchedResource{APIVersion: "v1", Resources: "x", IndexBy: []string{"metadata.name"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"-": "x"}}}, "spec.watchedResources[bad].labelSelector"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{"bad": tc.w}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Two resources share an informer and a store exactly when their
// resource, selector and index are equal.
func TestWatchKey(t *testing.T) {
	base := watchedResource("v1", "services", false)
	sel := base
	sel.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	idx := base
	idx.IndexBy = []string{"metadata.name"}
	checked := base
	checked.WebhookValidation = true
	fieldSel := base
	fieldSel.FieldSelector = "metadata.name!=kubernetes"
	both := sel
	both.FieldSelector = fieldSel.FieldSelector
	m, err := New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{
		"base": base, "sel": sel, "idx": idx, "checked": checked, "fields": fieldSel, "both": both,
	}})
	require.NoError(t, err)
	get := func(k string) WatchKey { r, _ := m.Get(k); return r.WatchKey() }
	assert.NotEqual(t, get("base"), get("sel"))
	assert.NotEqual(t, get("base"), get("idx"))
	assert.Equal(t, get("base"), get("checked"), "admission does not change what is watched")
	assert.Equal(t, "app=x", get("sel").Selector)
	assert.NotEqual(t, get("base"), get("fields"))
	assert.NotEqual(t, get("sel"), get("both"))
	assert.Equal(t, "metadata.name!=kubernetes", get("fields").Fields)
	assert.Equal(t, "services.v1 (metadata.name!=kubernetes)", get("fields").String())
	assert.Equal(t, "services.v1 (app=x; metadata.name!=kubernetes)", get("both").String())
	assert.Equal(t, "services.v1 (app=x)", get("sel").String())
	assert.Equal(t, "ingresses.v1.networking.k8s.io", ResourceString(ingressesGVR))
}

func TestStoreChanges(t *testing.T) {
	m := testModel(t)
	in := object("v1", "Service", "a", map[string]string{"routed": "yes"})
	out := object("v1", "Service", "a", nil)
	for _, tc := range []struct {
		name string
		c    Change
		want map[string]store.Operation
	}{
		{"CREATE inside the selector", Change{Resource: servicesGVR, Operation: store.Create, Object: in},
			map[string]store.Operation{"services": store.Create, "routed": store.Create}},
		{"CREATE outside it", Change{Resource: servicesGVR, Operation: store.Create, Object: out},
			map[string]store.Operation{"services": store.Create}},
		{"UPDATE moving out of the selector is a DELETE there", Change{Resource: servicesGVR, Operation: store.Update, Object: out, OldObject: in},
			map[string]store.Operation{"services": store.Update, "routed": store.Delete}},
		{"UPDATE moving in is an UPDATE (added)", Change{Resource: servicesGVR, Operation: store.Update, Object: in, OldObject: out},
			map[string]store.Operation{"services": store.Update, "routed": store.Update}},
		{"UPDATE staying outside changes nothing there", Change{Resource: servicesGVR, Operation: store.Update, Object: out, OldObject: out},
			map[string]store.Operation{"services": store.Update}},
		{"DELETE inside", Change{Resource: servicesGVR, Operation: store.Delete, OldObject: in},
			map[string]store.Operation{"services": store.Delete, "routed": store.Delete}},
		{"DELETE outside", Change{Resource: servicesGVR, Operation: store.Delete, OldObject: out},
			map[string]store.Operation{"services": store.Delete}},
		{"an unwatched resource", Change{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: store.Create, Object: out},
			map[string]store.Operation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.StoreChanges(tc.c)
			require.NoError(t, err)
			ops := map[string]store.Operation{}
			for k, c := range got {
				ops[k] = c.Operation
			}
			assert.Equal(t, tc.want, ops)
		})
	}
	_, err := m.StoreChanges(Change{Resource: servicesGVR, Operation: "CONNECT"})
	assert.ErrorContains(t, err, "unsupported operation")
}

func TestOverlay(t *testing.T) {
	m := testModel(t)
	stores := m.NewStores()
	_, err := m.Add(stores, servicesGVR, object("v1", "Service", "a", map[string]string{"routed": "yes"}))
	require.NoError(t, err)
	set := store.ReadOnly(stores)

	got, changed, err := m.Overlay(set, Change{Resource: servicesGVR, Operation: store.Create, Object: object("v1", "Service", "b", nil)})
	require.NoError(t, err)
	assert.Equal(t, []string{"services"}, changed)
	assert.Equal(t, 2, got["services"].Len())
	assert.Same(t, stores["routed"], got["routed"], "unchanged stores are shared")
	assert.Equal(t, 1, stores["services"].Len(), "the actual store is untouched")

	got, changed, err = m.Overlay(set, Change{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: store.Create, Object: object("v1", "ConfigMap", "c", nil)})
	require.NoError(t, err)
	assert.Empty(t, changed)
	assert.Equal(t, set, got)
}

// A fieldSelector admits objects as the API server's list would: by the
// text of the named fields, a missing field being "".
func TestSelectsByFields(t *testing.T) {
	ingress := func(class any) *unstructured.Unstructured {
		u := object("networking.k8s.io/v1", "Ingress", "web", map[string]string{"app": "web"})
		if class != nil {
			u.Object["spec"] = map[string]any{"ingressClassName": class}
		}
		return u
	}
	for _, tc := range []struct {
		name, fields string
		labels       *metav1.LabelSelector
		obj          *unstructured.Unstructured
		want         bool
	}{
		{"no selector", "", nil, ingress(nil), true},
		{"name equals", "metadata.name=web", nil, ingress(nil), true},
		{"name differs", "metadata.name=api", nil, ingress(nil), false},
		{"namespace not", "metadata.namespace!=default", nil, ingress(nil), false},
		{"nested field", "spec.ingressClassName=htc", nil, ingress("htc"), true},
		{"nested field, other value", "spec.ingressClassName=htc", nil, ingress("nginx"), false},
		{"missing field is empty", "spec.ingressClassName=", nil, ingress(nil), true},
		{"missing field is not a value", "spec.ingressClassName!=htc", nil, ingress(nil), true},
		{"a number as text", "spec.ingressClassName=3", nil, ingress(int64(3)), true},
		{"two terms", "metadata.name=web,spec.ingressClassName=htc", nil, ingress("nginx"), false},
		{"labels and fields both", "metadata.name=web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, ingress(nil), false},
		{"nil object", "metadata.name=web", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watchedResource("networking.k8s.io/v1", "ingresses", true)
			w.FieldSelector, w.LabelSelector = tc.fields, tc.labels
			m, err := New(&config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{"ingresses": w}})
			require.NoError(t, err)
			r, _ := m.Get("ingresses")
			assert.Equal(t, tc.want, r.Selects(tc.obj))
		})
	}
}
