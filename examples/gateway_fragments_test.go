package examples_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// gatewayEngine is the Gateway library's template engine with
// extraContext.denyInvalid set as given, after edit.
func gatewayEngine(t testing.TB, denyInvalid bool, edit func(*config.HAProxyTemplateConfigSpec)) (*htcrender.Engine, *config.HAProxyTemplateConfig) {
	t.Helper()
	cfg, err := config.LoadFile("gateway/config.yaml")
	require.NoError(t, err)
	if !denyInvalid {
		raw := strings.Replace(string(cfg.Spec.ExtraContext.Raw), `"denyInvalid":true`, `"denyInvalid":false`, 1)
		require.Contains(t, raw, `"denyInvalid":false`)
		cfg.Spec.ExtraContext.Raw = []byte(raw)
	}
	if edit != nil {
		edit(&cfg.Spec)
	}
	e, err := htcrender.New(&cfg.Spec)
	require.NoError(t, err)
	return e, cfg
}

// beforeTemplates puts the library's templates before fragments
// (gateway/testdata/before.yaml) into spec.
func beforeTemplates(t *testing.T) func(*config.HAProxyTemplateConfigSpec) {
	raw, err := os.ReadFile("gateway/testdata/before.yaml")
	require.NoError(t, err)
	var before struct {
		Spec config.HAProxyTemplateConfigSpec `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &before))
	require.NotEmpty(t, before.Spec.HAProxyConfig.Template)
	return func(spec *config.HAProxyTemplateConfigSpec) {
		spec.TemplateSnippets, spec.HAProxyConfig = before.Spec.TemplateSnippets, before.Spec.HAProxyConfig
		spec.ResourceStatus = nil // the templates before fragments wrote no status
	}
}

// gatewayStores are the library's stores (cfg's watched resources)
// holding objs.
func gatewayStores(t testing.TB, cfg *config.HAProxyTemplateConfig, objs map[string][]map[string]any) map[string]*store.Store {
	t.Helper()
	stores := map[string]*store.Store{}
	for key, w := range cfg.Spec.WatchedResources {
		s, err := store.New(w.IndexBy)
		require.NoError(t, err)
		stores[key] = s
	}
	for key, list := range objs {
		require.Contains(t, stores, key)
		for _, o := range list {
			require.NoError(t, stores[key].Add(&unstructured.Unstructured{Object: o}))
		}
	}
	return stores
}

// asBefore is a render's outcome as text: every file of the bundle, or
// the failure's reason with template locations elided (the two template
// sets name other templates and lines).
func asBefore(b *bundle.Bundle, err error) string {
	if err != nil {
		return "error: " + templateLine.ReplaceAllString(phase.Reason(err), "template T line N")
	}
	var parts []string
	for _, f := range b.AllFiles() {
		parts = append(parts, "== "+f.RelPath+"\n"+f.Content)
	}
	return strings.Join(parts, "\n")
}

// exactly is a render's outcome as text: every file of the bundle, the
// source map and the status documents, or the failure's reason and the
// objects it is attributed to.
func exactly(b *bundle.Bundle, err error) string {
	if err != nil {
		out := "error: " + phase.Reason(err)
		var ae interface{ Objects() []bundle.ObjectRef }
		if errors.As(err, &ae) {
			out += fmt.Sprintf(" %v", ae.Objects())
		}
		return out
	}
	status, _ := b.Target(bundle.StatusTarget)
	sources := "none" // a render that names no object
	if src := b.Sources(); src != nil {
		sources = fmt.Sprintf("%+v", *src)
	}
	return asBefore(b, nil) + "\n== sources\n" + sources + "\n== status\n" + status
}

// TestGatewayLibraryRendersAsBefore renders the Gateway library without
// route maps (extraContext.routeMaps false: every match a line of
// haproxy.cfg) and its templates before fragments
// (gateway/testdata/before.yaml) over generated
// Gateway API states, with extraContext.denyInvalid true and false: both
// render the same bundle byte for byte, or fail with the same reason
// (template line numbers aside).
func TestGatewayLibraryRendersAsBefore(t *testing.T) {
	outcomes := map[string]int{}
	for _, deny := range []bool{true, false} {
		current, cfg := gatewayEngine(t, deny, withExtra(t, map[string]any{"routeMaps": false}))
		before, _ := gatewayEngine(t, deny, beforeTemplates(t))
		for i := range 300 {
			size := 6
			if i%50 == 0 {
				size = 80
			}
			objs := generateGatewayState(rand.New(rand.NewPCG(uint64(i), 11)), size)
			if servesGRPC(objs) {
				outcomes["GRPCRoute (not served before)"]++
				continue
			}
			if servesL4(objs) {
				outcomes["TLS or TCP listener (not served before)"]++
				continue
			}
			if usesNewerHTTP(objs) {
				outcomes["CORS, retry or RequestMirror (not served before)"]++
				continue
			}
			set := store.ReadOnly(gatewayStores(t, cfg, objs))
			in := htcrender.Input{Stores: set, BaseDir: "/b"}
			want := asBefore(before.Render(context.Background(), in))
			got := asBefore(current.Render(context.Background(), in))
			if want != got && hasRefusedSelector(objs) {
				// A label selector Kubernetes refuses (values on Exists or
				// DoesNotExist, In without values...) matches no namespace
				// (selectorMatches, metav1.LabelSelectorAsSelector); before,
				// the templates read it themselves and ignored the values.
				outcomes["a selector Kubernetes refuses matches no namespace"]++
				continue
			}
			if !deny && strings.HasPrefix(want, "error: ") && strings.Contains(want, "Conflict)") {
				// Listeners in conflict are not served and the Gateway's
				// status says why (gw-listenerset-merge); before, they
				// failed the render in both modes.
				outcomes["conflict reported in status (denyInvalid false)"]++
				continue
			}
			if strings.HasPrefix(want, "error: ") {
				outcomes["fails"]++
				outcomes[regexp.MustCompile(`\(([A-Za-z]+)[);]`).FindString(want)]++
			} else {
				outcomes["renders"]++
			}
			if want != got && onlyMatchOrderDiffers(want, got) {
				// The precedence by the route's own hostname
				// (GatewayRouteHostnameIntersectionPrecedence) orders a
				// host's match lines otherwise than before; nothing else
				// may change.
				outcomes["match lines reordered by the route's own hostname"]++
				continue
			}
			require.Equal(t, want, got, "state %d (denyInvalid %v)", i, deny)
		}
	}
	t.Logf("generated states: %v", outcomes)
	assert.Greater(t, outcomes["renders"], 200, "a third of the states render")
	for _, reason := range []string{"(NoMatchingParent)", "(RefNotPermitted)", "(BackendNotFound)", "(NotAllowedByListeners)", "(UnsupportedValue)", "(InvalidCertificateRef)", "(HostnameConflict)"} {
		assert.Positive(t, outcomes[reason], "some states fail with %s", reason)
	}
}

// onlyMatchOrderDiffers reports whether a and b have the same lines, and
// the same lines in the same order once the lines setting txn.match to a
// route's match are left out: only the order of those differs.
func onlyMatchOrderDiffers(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return false
	}
	others := func(ls []string) []string {
		var out []string
		for _, l := range ls {
			if !strings.Contains(l, "http-request set-var(txn.match) str(") {
				out = append(out, l)
			}
		}
		return out
	}
	if !slices.Equal(others(la), others(lb)) {
		return false
	}
	sa, sb := slices.Clone(la), slices.Clone(lb)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(sa, sb)
}

// servesGRPC: objs hold a GRPCRoute or a listener allowing kind
// GRPCRoute, which the templates before fragments refused.
func servesGRPC(objs map[string][]map[string]any) bool {
	if len(objs["grpcroutes"]) > 0 {
		return true
	}
	for _, gw := range objs["gateways"] {
		spec, _ := gw["spec"].(map[string]any)
		for _, l := range asList(spec["listeners"]) {
			ar, _ := l.(map[string]any)["allowedRoutes"].(map[string]any)
			for _, k := range asList(ar["kinds"]) {
				if k.(map[string]any)["kind"] == "GRPCRoute" {
					return true
				}
			}
		}
	}
	return false
}

// servesL4: objs hold a listener of protocol TLS or TCP on a Gateway of
// the library's classes, which the templates before fragments refused
// (UnsupportedProtocol).
func servesL4(objs map[string][]map[string]any) bool {
	for _, gw := range objs["gateways"] {
		spec, _ := gw["spec"].(map[string]any)
		if spec["gatewayClassName"] == "nginx" {
			continue
		}
		for _, l := range asList(spec["listeners"]) {
			if p := l.(map[string]any)["protocol"]; p == "TLS" || p == "TCP" {
				return true
			}
		}
	}
	return false
}

// TestGatewayFragmentsRenderAsInFull walks generated Gateway API states
// through random changes, as the controller and the webhook render them:
// the render of each proposed change (reusing the records of the last
// recording render of the live state) and the next recording render
// equal a full render of the same stores, byte for byte, source map and
// the objects a failure is attributed to included.
func TestGatewayFragmentsRenderAsInFull(t *testing.T) {
	var reused int64
	// What the library refuses, and what it serves (in status documents
	// and haproxy.cfg), of what the templates before fragments did not know.
	newer := []string{"not a PEM", "ListenerSet"}
	served := []string{"kind: TLSRoute", "kind: TCPRoute", "kind: ListenerSet", "attachedListenerSets",
		"kind: BackendTLSPolicy", "retry-on", "access-control-allow-origin", "InsecureFrontendValidationMode", "lua.htc_mirror"}
	seen := map[string]int{}
	for i := range 60 {
		deny := i%2 == 0
		var edit func(*config.HAProxyTemplateConfigSpec)
		if i%4 < 2 {
			edit = withExtra(t, map[string]any{"requestMirror": true})
		}
		e, cfg := gatewayEngine(t, deny, edit)
		r := rand.New(rand.NewPCG(uint64(i), 13))
		// The newer HTTP features where RequestMirror is on, else the
		// newer kinds or both: a state with both fails on one of them
		// more often than not, and each must at times render, or fail on
		// what the older generator made.
		parts := newHTTP
		if edit == nil {
			parts = []newerParts{newL4, newL4 | newHTTP}[(i/4)%2]
		}
		objs := generateGatewayStateOf(r, 30, parts)
		live := gatewayStores(t, cfg, objs)
		w := &changer{r: r, objs: objs}
		render1 := func(set store.Set, in htcrender.Input) string {
			in.Stores, in.BaseDir = set, "/b"
			return exactly(e.Render(context.Background(), in))
		}
		render1(store.ReadOnly(live), htcrender.Input{Record: true})
		for step := range 8 {
			key, change := w.next(t)
			proposal, err := store.ReadOnly(live).WithChange(key, change)
			require.NoError(t, err)
			want := render1(proposal, htcrender.Input{Full: true})
			require.Equal(t, want, render1(proposal, htcrender.Input{}), "state %d step %d: a proposed %s of %s", i, step, change.Operation, key)
			for _, what := range newer {
				if strings.HasPrefix(want, "error: ") && strings.Contains(want, what) {
					seen[what]++
				}
			}
			if strings.Contains(want, "kind: GRPCRoute") {
				seen["GRPCRoute status"]++
			}
			for _, what := range append(served, "_c_", "ca-file") {
				if strings.Contains(want, what) {
					seen[what]++
				}
			}
			if strings.Contains(want, "controllerName: example.com/nginx") {
				seen["status keeping another controller's entry"]++
			}
			testutil.ApplyChange(t, live[key], change)
			want = render1(store.ReadOnly(live), htcrender.Input{Full: true})
			require.Equal(t, want, render1(store.ReadOnly(live), htcrender.Input{Record: true}), "state %d step %d: after a %s of %s", i, step, change.Operation, key)
		}
		reused += e.FragmentStats().Reused
	}
	assert.Positive(t, reused, "renders reused fragments")
	for _, what := range newer {
		assert.Positive(t, seen[what], "some proposals fail naming %s", what)
	}
	assert.Positive(t, seen["status keeping another controller's entry"], "some proposals render route status")
	assert.Positive(t, seen["GRPCRoute status"], "some proposals render GRPCRoute status")
	for _, what := range served {
		assert.Positive(t, seen[what], "some proposals render %q (status of the newer kinds, retries, CORS, insecure fallback, mirrors)", what)
	}
	t.Logf("proposals failing for what the templates before fragments did not know, and rendering the newer features: %v", seen)
}

// TestGatewayOneRouteChangeRendersOneFragment: with 300 HTTPRoutes on one
// Gateway recorded, a proposed change of one route's path runs that
// route's fragment and the fragment of the backend it emits (a new value:
// the emitted dict is the route's), and reuses every other, its status
// fragment's too: the parents it emits are what they were, so they are
// the value emitted before (fragments.Parts keeps equal emitted values
// once), the key of the status fragment's record.
func TestGatewayOneRouteChangeRendersOneFragment(t *testing.T) {
	e, cfg := gatewayEngine(t, true, nil)
	objs := map[string][]map[string]any{
		"gatewayclasses": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "htc"}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}},
		"gateways": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
			"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}}}}},
	}
	const n = 300
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%10), fmt.Sprintf("app%d", i)
		objs["services"] = append(objs["services"], map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}})
		objs["httproutes"] = append(objs["httproutes"], benchRoute(ns, name, "/"))
	}
	live := gatewayStores(t, cfg, objs)
	was, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true})
	require.NoError(t, err)
	before := e.FragmentStats()
	old, ok := live["httproutes"].Get("ns7", "app17")
	require.True(t, ok)
	proposal, err := store.ReadOnly(live).WithChange("httproutes", store.Change{Operation: store.Update,
		Object: &unstructured.Unstructured{Object: benchRoute("ns7", "app17", "/v2")}, OldObject: old})
	require.NoError(t, err)
	b, err := e.Render(context.Background(), htcrender.Input{Stores: proposal, BaseDir: "/b"})
	require.NoError(t, err)
	assert.Contains(t, bundleFile(b, "maps/routes-prefix.map"), "gw_infra_gw_80@http@app17.example.com@/v2/ @ns7_app17_80:ns7_app17_0_0\n")
	assert.Equal(t, was.Config, b.Config, "haproxy.cfg: the route is a route map entry")
	after := e.FragmentStats()
	assert.Equal(t, int64(2), after.Ran-before.Ran, "fragments run: the changed route's and the backend it emits")
	assert.Equal(t, int64(3*n-1), after.Reused-before.Reused, "fragments reused: every other route's and backend's, every status document's and the Gateway's listener merge (gw-listenerset-merged)")
}

// bundleFile is the content of the bundle's file at relPath, "" if none.
func bundleFile(b *bundle.Bundle, relPath string) string {
	for _, f := range b.AllFiles() {
		if f.RelPath == relPath {
			return f.Content
		}
	}
	return ""
}

// benchRoute is an HTTPRoute ns/name on infra/gw routing path to the
// Service ns/name.
func benchRoute(ns, name, path string) map[string]any {
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "infra"}}, "hostnames": []any{name + ".example.com"},
			"rules": []any{map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": path}}},
				"backendRefs": []any{map[string]any{"name": name, "port": int64(80)}}}}}}
}

// changer picks random changes of a generated state: an object of a
// random store updated with a field of another generated state's object
// of its kind, deleted, or one added.
type changer struct {
	r    *rand.Rand
	objs map[string][]map[string]any
	n    int // objects added
	n3   int // changes chosen
}

func (c *changer) next(t *testing.T) (string, store.Change) {
	t.Helper()
	other := generateGatewayStateOf(c.r, 30, newL4|newHTTP)
	var keys []string
	for k, list := range other {
		if len(list) > 0 && k != "grpcroutes" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	key := keys[c.r.IntN(len(keys))]
	// Every third route change is of a GRPCRoute when there is one,
	// chosen without a draw of c.r (so the other changes are those of
	// states without GRPCRoutes).
	if c.n3++; key == "httproutes" && len(other["grpcroutes"]) > 0 && c.n3%3 == 0 {
		key = "grpcroutes"
	}
	fresh := other[key][c.r.IntN(len(other[key]))]
	list := c.objs[key]
	if len(list) == 0 || c.r.IntN(4) == 0 {
		c.n++
		md := fresh["metadata"].(map[string]any)
		md["name"] = fmt.Sprintf("%v-new%d", md["name"], c.n)
		c.objs[key] = append(list, fresh)
		return key, store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: fresh}}
	}
	i := c.r.IntN(len(list))
	old := list[i]
	if c.r.IntN(5) == 0 {
		c.objs[key] = append(list[:i:i], list[i+1:]...)
		return key, store.Change{Operation: store.Delete, OldObject: &unstructured.Unstructured{Object: old}}
	}
	// The old object's identity with the fresh one's content.
	upd := map[string]any{}
	for k, v := range fresh {
		upd[k] = v
	}
	md := map[string]any{}
	for k, v := range fresh["metadata"].(map[string]any) {
		md[k] = v
	}
	om := old["metadata"].(map[string]any)
	md["name"], md["namespace"] = om["name"], om["namespace"]
	if om["namespace"] == nil {
		delete(md, "namespace")
	}
	upd["metadata"] = md
	c.objs[key] = append(append(list[:i:i], upd), list[i+1:]...)
	return key, store.Change{Operation: store.Update, Object: &unstructured.Unstructured{Object: upd}, OldObject: &unstructured.Unstructured{Object: old}}
}

// BenchmarkGatewayRender renders the Gateway library over N HTTPRoutes on
// one Gateway, each with its Service: in full, and a proposed change of
// one route's path after a recording render (what an admission renders).
func BenchmarkGatewayRender(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		t := &testing.T{}
		e, cfg := gatewayEngine(t, true, nil)
		objs := map[string][]map[string]any{
			"gatewayclasses": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "htc"}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}},
			"gateways": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
				"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}}}}},
		}
		for i := range n {
			ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)
			objs["services"] = append(objs["services"], map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}})
			objs["httproutes"] = append(objs["httproutes"], benchRoute(ns, name, "/"))
		}
		live := gatewayStores(t, cfg, objs)
		ctx := context.Background()
		b.Run(fmt.Sprintf("routes=%d/full", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("routes=%d/one-route-changed", n), func(b *testing.B) {
			if _, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true}); err != nil {
				b.Fatal(err)
			}
			old, _ := live["httproutes"].Get("ns7", "app7")
			proposal, err := store.ReadOnly(live).WithChange("httproutes", store.Change{Operation: store.Update,
				Object: &unstructured.Unstructured{Object: benchRoute("ns7", "app7", "/v2")}, OldObject: old})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := e.Render(ctx, htcrender.Input{Stores: proposal, BaseDir: "/b"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
