// Package examples_test checks the shipped example libraries.
package examples_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestIngressLibraryRendersAsBefore renders the Ingress library and its
// earlier haproxy.cfg template (testdata/haproxy.cfg.quadratic.tmpl, which
// collected every path's backend with append, quadratic in the paths of an
// Ingress) over generated clusters: both render the same bundle byte for
// byte, or fail with the same reason (template line numbers aside).
func TestIngressLibraryRendersAsBefore(t *testing.T) {
	current := build(t, nil)
	before := build(t, func(cfg *config.HAProxyTemplateConfig) {
		text, err := os.ReadFile("ingress/testdata/haproxy.cfg.quadratic.tmpl")
		require.NoError(t, err)
		cfg.Spec.HAProxyConfig.Template = string(text)
	})
	require.NotEqual(t, current.Config.Spec.HAProxyConfig.Template, before.Config.Spec.HAProxyConfig.Template)
	outcomes := map[string]int{}
	for i := range 400 {
		size := 4
		if i%50 == 0 {
			size = 120 // some large clusters: many Ingresses, many paths each
		}
		objs := generateCluster(rand.New(rand.NewPCG(uint64(i), 7)), size)
		want, wantErr := render(t, before, objs)
		got, gotErr := render(t, current, objs)
		if wantErr != "" {
			outcomes["fails"]++
			outcomes[regexp.MustCompile(`'[^']*'|\d+`).ReplaceAllString(wantErr, "_")]++
			assert.Equal(t, wantErr, gotErr, "cluster %d", i)
			continue
		}
		outcomes["renders"]++
		require.Empty(t, gotErr, "cluster %d", i)
		assert.Equal(t, want, got, "cluster %d", i)
	}
	t.Logf("generated clusters: %v", outcomes)
	assert.Greater(t, outcomes["renders"], 100, "most clusters render")
	assert.Greater(t, outcomes["fails"], 20, "some clusters fail, for each documented reason")
}

// build builds the Ingress library's pipeline, render only, after edit.
func build(t *testing.T, edit func(*config.HAProxyTemplateConfig)) *dryrun.Pipeline {
	t.Helper()
	cfg, err := config.LoadFile("ingress/config.yaml")
	require.NoError(t, err)
	if edit != nil {
		edit(cfg)
	}
	p, err := dryrun.Build(cfg, dryrun.Env{})
	require.NoError(t, err)
	return p
}

// templateLine is a location in a template: the library renders each
// Ingress in a fragment, so a failure there is located in the fragment's
// template rather than in haproxy.cfg.
var templateLine = regexp.MustCompile(`template \S+ line \d+`)

// render renders objs with p: the bundle's files, or the failure's reason
// with template locations elided.
func render(t *testing.T, p *dryrun.Pipeline, objs map[string][]map[string]any) (map[string]string, string) {
	t.Helper()
	stores := p.Model.NewStores()
	for key, list := range objs {
		for _, o := range list {
			require.NoError(t, stores[key].Add(&unstructured.Unstructured{Object: o}))
		}
	}
	b, err := p.Render(context.Background(), store.ReadOnly(stores))
	if err != nil {
		return nil, templateLine.ReplaceAllString(phase.Reason(err), "template T line N")
	}
	files := map[string]string{}
	for _, f := range b.AllFiles() {
		files[f.RelPath] = f.Content
	}
	return files, ""
}

// generateCluster makes Services, EndpointSlices, Secrets and Ingresses
// that reach every branch of the library: shared Services, ports by name
// and number, ExternalName Services, ready and unready endpoints, TLS
// Secrets, ingress classes, hostless rules, every path type and default
// backends; one cluster in three also has what fails rendering (missing
// Services, ports and Secrets, incomplete Secrets, wildcard hosts, resource
// backends). Ingresses number about size, with up to 3*size paths.
func generateCluster(r *rand.Rand, size int) map[string][]map[string]any {
	g := &gen{r: r, bad: r.IntN(3) == 0, size: size}
	out := map[string][]map[string]any{}
	for _, ns := range []string{"default", "other"} {
		for _, name := range []string{"echo", "api", "web", "ext"} {
			if g.rarely(6) {
				continue
			}
			out["services"] = append(out["services"], g.service(ns, name))
			for j := range r.IntN(3) {
				out["endpoints"] = append(out["endpoints"], g.slice(ns, name, j))
			}
		}
		for _, name := range []string{"tls-a", "tls-b"} {
			if g.rarely(4) {
				continue
			}
			data := map[string]any{"tls.crt": "Y2VydA==", "tls.key": "a2V5"}
			if g.rarely(6) {
				delete(data, g.pick("tls.crt", "tls.key"))
			}
			out["secrets"] = append(out["secrets"], map[string]any{"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": name, "namespace": ns}, "data": data})
		}
	}
	for i := range 1 + r.IntN(size) {
		out["ingresses"] = append(out["ingresses"], g.ingress(fmt.Sprintf("ing-%03d", i)))
	}
	return out
}

// gen generates one cluster; bad clusters may hold what fails rendering.
type gen struct {
	r    *rand.Rand
	bad  bool
	size int
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// rarely is true one time in n, in bad clusters only.
func (g *gen) rarely(n int) bool { return g.bad && g.r.IntN(n) == 0 }

func (g *gen) service(ns, name string) map[string]any {
	ports := []any{}
	for _, p := range []map[string]any{{"name": "http", "port": int64(80)}, {"port": int64(8080)}, {"name": "admin", "port": int64(9000)}} {
		if !g.rarely(3) {
			ports = append(ports, p)
		}
	}
	spec := map[string]any{"ports": ports}
	if name == "ext" || g.r.IntN(8) == 0 {
		spec["type"], spec["externalName"] = "ExternalName", "localhost"
	}
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
}

func (g *gen) slice(ns, svc string, j int) map[string]any {
	var eps []any
	for k := range g.r.IntN(4) {
		ep := map[string]any{"addresses": []any{fmt.Sprintf("10.%d.%d.%d", j, g.r.IntN(250), k+1)}}
		switch g.r.IntN(3) {
		case 0:
			ep["conditions"] = map[string]any{"ready": false}
		case 1:
			ep["conditions"] = map[string]any{"ready": true}
		}
		eps = append(eps, ep)
	}
	port := map[string]any{"port": int64(8000 + g.r.IntN(3))}
	if g.r.IntN(3) > 0 {
		port["name"] = g.pick("http", "admin")
	}
	return map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": fmt.Sprintf("%s-%d", svc, j), "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": svc}},
		"addressType": "IPv4", "ports": []any{port}, "endpoints": eps}
}

// backend is a backend of an Ingress: a Service by port name or number
// (in bad clusters sometimes a missing Service or port, or a resource).
func (g *gen) backend() map[string]any {
	if g.rarely(40) {
		return map[string]any{"resource": map[string]any{"kind": "Bucket", "name": "b"}}
	}
	name := g.pick("echo", "echo", "api", "web", "ext")
	if g.rarely(10) {
		name = "missing"
	}
	port := map[string]any{"name": g.pick("http", "http", "admin")}
	if g.r.IntN(2) == 0 {
		port = map[string]any{"number": []int64{80, 8080, 9000}[g.r.IntN(3)]}
	}
	if g.rarely(10) {
		port = map[string]any{"name": "none"}
	}
	return map[string]any{"service": map[string]any{"name": name, "port": port}}
}

func (g *gen) ingress(name string) map[string]any {
	spec := map[string]any{}
	switch g.r.IntN(6) {
	case 0:
		spec["ingressClassName"] = "nginx"
	case 1:
	default:
		spec["ingressClassName"] = "htc"
	}
	var rules []any
	for range g.r.IntN(4) {
		rule := map[string]any{}
		if host := g.pick("", "a.example.com", "B.example.com", "c.example.com"); host != "" {
			rule["host"] = host
		}
		if g.rarely(20) {
			rule["host"] = "*.wild.com"
		}
		var paths []any
		for range g.r.IntN(1 + g.size/2) {
			paths = append(paths, map[string]any{
				"path":     g.pick("/", "/api", "/api/", "/static", fmt.Sprintf("/p%d", g.r.IntN(g.size))),
				"pathType": g.pick("Exact", "Prefix", "ImplementationSpecific"),
				"backend":  g.backend()})
		}
		if paths != nil || g.r.IntN(2) == 0 {
			rule["http"] = map[string]any{"paths": paths}
		}
		rules = append(rules, rule)
	}
	if rules != nil {
		spec["rules"] = rules
	}
	if g.r.IntN(4) == 0 {
		spec["defaultBackend"] = g.backend()
	}
	if g.r.IntN(4) == 0 {
		secret := g.pick("tls-a", "tls-b")
		if g.rarely(4) {
			secret = "tls-missing"
		}
		spec["tls"] = []any{map[string]any{"secretName": secret}}
	}
	return map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": name, "namespace": g.pick("default", "other")}, "spec": spec}
}

// With extraContext.statusAddresses, the Ingress library writes the status
// of exactly the Ingresses it serves (class htc, or none), each an ip or a
// hostname; without, none.
func TestIngressLibraryStatusIsTheServedIngresses(t *testing.T) {
	withAddresses := build(t, func(cfg *config.HAProxyTemplateConfig) {
		cfg.Spec.ExtraContext.Raw = []byte(`{"ingressClassName": "htc", "watchIngressWithoutClass": true, "httpPort": 8080, "httpsPort": 8443,
			"statusAddresses": ["203.0.113.10", "2001:db8::1", "lb.example.com"]}`)
	})
	without := build(t, nil)
	lb := map[string]any{"loadBalancer": map[string]any{"ingress": []any{
		map[string]any{"ip": "203.0.113.10"}, map[string]any{"ip": "2001:db8::1"}, map[string]any{"hostname": "lb.example.com"}}}}
	checked := 0
	for i := range 100 {
		objs := generateCluster(rand.New(rand.NewPCG(uint64(i), 11)), 6)
		stores := withAddresses.Model.NewStores()
		var served []string
		for key, list := range objs {
			for _, o := range list {
				require.NoError(t, stores[key].Add(&unstructured.Unstructured{Object: o}))
				if class, _, _ := unstructured.NestedString(o, "spec", "ingressClassName"); key == "ingresses" && (class == "" || class == "htc") {
					meta := o["metadata"].(map[string]any)
					served = append(served, "Ingress "+meta["namespace"].(string)+"/"+meta["name"].(string))
				}
			}
		}
		b, err := withAddresses.Render(t.Context(), store.ReadOnly(stores))
		if err != nil {
			continue // a cluster that fails rendering has no status either
		}
		checked++
		var got []string
		for _, d := range b.Status {
			got = append(got, d.Object())
			assert.Equal(t, lb, d.Status, "cluster %d: %s", i, d.Object())
			assert.Equal(t, "ingresses", d.Store)
		}
		assert.ElementsMatch(t, served, got, "cluster %d", i)
		b, err = without.Render(t.Context(), store.ReadOnly(stores))
		require.NoError(t, err)
		assert.Empty(t, b.Status, "cluster %d: no addresses, no status", i)
	}
	assert.Greater(t, checked, 50, "most clusters render")
}
