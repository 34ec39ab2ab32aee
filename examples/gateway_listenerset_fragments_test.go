package examples_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestGatewayListenerSetChangesRenderAsInFull: over bench-scale's
// gateway-tls state, small (20 apps, each with an HTTPRoute, and a
// ListenerSet with a TLS Passthrough listener and a TLSRoute on it:
// testutil.ClusterTLSPassthrough), recorded, each change of what the
// Gateway's listener merge (gw-listenerset-merged, a fragment) reads or
// of the routes on its listeners renders, proposed, as a full render
// does, byte for byte, source map and status included; so does the
// state after it, recorded. The changes: routes added, a ListenerSet
// added whose hostname another set has (a conflict), one updated to a
// new hostname, one deleted, the Gateway's allowedListeners narrowed to
// a Namespace selector (every set not allowed) and a Namespace labelled
// to match it, the Gateway's status written (a new object), a second
// TLSRoute on a set's listener, a TLSRoute to a missing set; then a
// config UPDATE (a new engine carrying the records: Engine.Carry).
func TestGatewayListenerSetChangesRenderAsInFull(t *testing.T) {
	for _, deny := range []bool{false, true} {
		t.Run(fmt.Sprintf("denyInvalid=%v", deny), func(t *testing.T) { listenerSetChangesRenderAsInFull(t, deny) })
	}
}

// listenerSetChangesRenderAsInFull is
// TestGatewayListenerSetChangesRenderAsInFull with extraContext.denyInvalid
// deny: with false, each state renders (what the library does not serve is
// in status documents); with true, the states from the conflict on fail,
// naming it.
func listenerSetChangesRenderAsInFull(t *testing.T, deny bool) {
	e, cfg := gatewayEngine(t, deny, nil)
	u := func(o *unstructured.Unstructured) map[string]any { return o.Object }
	class, gw := testutil.ClusterGateway("infra", "gw", "htc")
	gw.Object["spec"].(map[string]any)["allowedListeners"] = map[string]any{"namespaces": map[string]any{"from": "All"}}
	objs := map[string][]map[string]any{"gatewayclasses": {u(class)}, "gateways": {u(gw)}}
	const n = 20
	for i := range n {
		svc, eps, _ := testutil.ClusterApp(i, false)
		ns, name := svc.GetNamespace(), svc.GetName()
		ls, tr := testutil.ClusterTLSPassthrough(ns, name, name, "infra", "gw")
		objs["services"] = append(objs["services"], u(svc))
		objs["endpoints"] = append(objs["endpoints"], u(eps))
		objs["httproutes"] = append(objs["httproutes"], u(testutil.ClusterHTTPRoute(ns, name, name, "infra", "gw")))
		objs["listenersets"] = append(objs["listenersets"], u(ls))
		objs["tlsroutes"] = append(objs["tlsroutes"], u(tr))
		objs["namespaces"] = appendNamespace(objs["namespaces"], ns, nil)
	}
	live := gatewayStores(t, cfg, objs)
	render := func(set store.Set, in htcrender.Input) string {
		in.Stores, in.BaseDir = set, "/b"
		return exactly(e.Render(context.Background(), in))
	}
	first := render(store.ReadOnly(live), htcrender.Input{Record: true})
	require.NotContains(t, first, "error: ")
	require.Contains(t, first, "kind: ListenerSet")

	app := func(i int) (ns, name string) {
		svc, _, _ := testutil.ClusterApp(i, false)
		return svc.GetNamespace(), svc.GetName()
	}
	get := func(key string, keys ...string) *unstructured.Unstructured {
		o, ok := live[key].Get(keys...)
		require.True(t, ok, "%s %v", key, keys)
		return o
	}
	ns0, name0 := app(0)
	ns1, name1 := app(1)
	ns2, name2 := app(2)
	conflicting, _ := testutil.ClusterTLSPassthrough(ns1, "again", name1, "infra", "gw")
	conflicting.Object["spec"].(map[string]any)["listeners"].([]any)[0].(map[string]any)["hostname"] = name0 + ".tls.example.com"
	renamed := get("listenersets", ns1, name1).DeepCopy()
	renamed.Object["spec"].(map[string]any)["listeners"].([]any)[0].(map[string]any)["hostname"] = "renamed.tls.example.com"
	selector := get("gateways", "infra", "gw").DeepCopy()
	selector.Object["spec"].(map[string]any)["allowedListeners"] = map[string]any{"namespaces": map[string]any{"from": "Selector",
		"selector": map[string]any{"matchLabels": map[string]any{"listeners": "yes"}}}}
	labelled := &unstructured.Unstructured{Object: appendNamespace(nil, ns2, map[string]any{"listeners": "yes"})[0]}
	written := selector.DeepCopy()
	written.Object["status"] = map[string]any{"attachedListenerSets": int64(1)}
	_, second := testutil.ClusterTLSPassthrough(ns1, name1, name1, "infra", "gw")
	second.SetName("second")                                                         // a second TLSRoute on set 1's listener
	_, orphan := testutil.ClusterTLSPassthrough(ns2, "orphan", name2, "infra", "gw") // its set is never created

	type step struct {
		key    string
		change func() store.Change
	}
	create := func(o *unstructured.Unstructured) func() store.Change {
		return func() store.Change { return store.Change{Operation: store.Create, Object: o} }
	}
	update := func(key string, o *unstructured.Unstructured) func() store.Change {
		return func() store.Change {
			return store.Change{Operation: store.Update, Object: o, OldObject: get(key, keysOf(o)...)}
		}
	}
	steps := []step{
		{"httproutes", create(testutil.ClusterHTTPRoute(ns0, "more", name0, "infra", "gw"))},
		{"listenersets", create(conflicting)},
		{"tlsroutes", create(second)},
		{"listenersets", update("listenersets", renamed)},
		{"listenersets", func() store.Change {
			return store.Change{Operation: store.Delete, OldObject: get("listenersets", ns2, name2)}
		}},
		{"gateways", update("gateways", selector)},
		{"namespaces", update("namespaces", labelled)},
		{"gateways", update("gateways", written)},
		{"tlsroutes", create(orphan)},
		{"httproutes", create(testutil.ClusterHTTPRoute(ns1, "last", name1, "infra", "gw"))},
	}
	for i, s := range steps {
		change := s.change()
		proposal, err := store.ReadOnly(live).WithChange(s.key, change)
		require.NoError(t, err)
		want := render(proposal, htcrender.Input{Full: true})
		assert.Equal(t, want, render(proposal, htcrender.Input{}), "step %d: a proposed %s of %s", i, change.Operation, s.key)
		testutil.ApplyChange(t, live[s.key], change)
		want = render(store.ReadOnly(live), htcrender.Input{Full: true})
		assert.Equal(t, want, render(store.ReadOnly(live), htcrender.Input{Record: true}), "step %d: after a %s of %s", i, change.Operation, s.key)
	}
	assert.Positive(t, e.FragmentStats().Reused, "renders reused fragments")

	// A config UPDATE that changes haproxy.cfg, as make bench-scale's: a
	// new engine with the live one's records and status decodings
	// (Engine.Carry) renders as a new engine in full.
	spec := cfg.Spec.DeepCopy()
	spec.HAProxyConfig.Template += "{{- range $r := .resources.httproutes.List }}{{ if eq $r.metadata.name \"never\" }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
	carried, err := htcrender.New(spec)
	require.NoError(t, err)
	require.Positive(t, carried.Carry(e))
	fresh, err := htcrender.New(spec)
	require.NoError(t, err)
	want := exactly(fresh.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true}))
	assert.Equal(t, want, exactly(carried.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b"})), "a config UPDATE")
	if !deny { // denied: the state fails, and a failed render is rendered again in full
		assert.Positive(t, carried.FragmentStats().Carried)
	}
}

// appendNamespace appends Namespace name with labels to list.
func appendNamespace(list []map[string]any, name string, labels map[string]any) []map[string]any {
	for _, o := range list {
		if o["metadata"].(map[string]any)["name"] == name {
			return list
		}
	}
	md := map[string]any{"name": name}
	if labels != nil {
		md["labels"] = labels
	}
	return append(list, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md})
}

// keysOf are the index keys of a namespaced object (namespace, name) or
// of a cluster-scoped one (name).
func keysOf(o *unstructured.Unstructured) []string {
	if o.GetNamespace() == "" {
		return []string{o.GetName()}
	}
	return []string{o.GetNamespace(), o.GetName()}
}
