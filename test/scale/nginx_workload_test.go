package scale

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestNginxWorkloadIsServed: 200 apps of the ingress-nginx workload pass
// the library's check (haproxy -c included), and the annotation mix
// reaches what nginxIngress says: values in maps, regex hosts (their
// locations, of the mix's literal path, in rxexact.map and rxprefix.map), lines,
// backends of their own, and Ingresses without annotations.
func TestNginxWorkloadIsServed(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("no haproxy in PATH")
	}
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(checker.Wait)
	cfg, err := config.LoadFile(filepath.Join("..", "..", workloads["ingress-nginx"].config))
	if err != nil {
		t.Fatal(err)
	}
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	if err != nil {
		t.Fatal(err)
	}
	stores := p.Model.NewStores()
	plain := 0
	for i := range 200 {
		svc, eps, _ := testutil.ClusterApp(i, false)
		ing := workloads["ingress-nginx"].appRoute(svc.GetName(), i)
		if len(ing.GetAnnotations()) == 0 {
			plain++
		}
		for key, obj := range map[string]*unstructured.Unstructured{"services": svc, "endpoints": eps, "ingresses": ing} {
			if err := stores[key].Add(obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, _ := p.CheckWith(context.Background(), store.ReadOnly(stores), dryrun.CheckOptions{SkipTests: true})
	if !v.Passed() {
		t.Fatalf("%s: %s", v.Phase, v.Reason)
	}
	for _, m := range []string{"body.map", "timeout.map", "ssl.map", "cors.map", "redirect.map", "vhost.map", "errors.map", "ratelimit.map", "regexservers.map", "rxexact.map", "rxprefix.map"} {
		if strings.Count(v.Bundle.Maps[m], "\n") == 0 {
			t.Errorf("no Ingress of the mix has an entry in %s", m)
		}
	}
	for _, line := range []string{"http-request replace-path", "!{ src 10.0.0.0/8 192.168.0.0/16 }", "cookie INGRESSCOOKIE insert", " ssl verify none"} {
		if !strings.Contains(v.Bundle.Config, line) {
			t.Errorf("no Ingress of the mix wrote %q", line)
		}
	}
	if plain < 3 || plain > 25 {
		t.Errorf("%d of 200 Ingresses carry no annotation; about one in twenty should", plain)
	}
	t.Logf("%d of 200 without annotations; haproxy.cfg %d lines", plain, strings.Count(v.Bundle.Config, "\n"))
}

// TestNginxWorkloadNewRoutesToExistingBackendsChangeOnlyMaps: over 100
// apps of the ingress-nginx workload, each of 100 new Ingresses made as
// bench-scale's "CREATE (new route, existing backend)" and its 16 clients
// make them (existingRoute, the harness's names and apps) leaves
// haproxy.cfg as it is: only maps change, as under the plain library. Made
// as a loaded app's Ingress is (appRoute), some add a backend section,
// which is what existingRoute corrects.
func TestNginxWorkloadNewRoutesToExistingBackendsChangeOnlyMaps(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("..", "..", workloads["ingress-nginx"].config))
	if err != nil {
		t.Fatal(err)
	}
	p, err := dryrun.Build(cfg, dryrun.Env{})
	if err != nil {
		t.Fatal(err)
	}
	const apps = 100
	w := workloads["ingress-nginx"]
	stores := p.Model.NewStores()
	for i := range apps {
		svc, eps, _ := testutil.ClusterApp(i, false)
		for key, obj := range map[string]*unstructured.Unstructured{"services": svc, "endpoints": eps, "ingresses": w.appRoute(svc.GetName(), i)} {
			if err := stores[key].Add(obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	live, err := p.RenderFull(ctx, store.ReadOnly(stores))
	if err != nil {
		t.Fatal(err)
	}
	changed := func(route func(string, int) *unstructured.Unstructured) (n int) {
		for k := range apps {
			obj := w.newRoute(fmt.Sprintf("bench-r1-s%d", k), (k*7919+104729)%apps, route)
			proposal, err := store.ReadOnly(stores).WithChange("ingresses", store.Change{Operation: store.Create, Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.RenderFull(ctx, proposal)
			if err != nil {
				t.Fatalf("%s: %v", obj.GetName(), err)
			}
			if b.Config != live.Config {
				n++
			}
		}
		return n
	}
	if n := changed(w.existingRoute); n != 0 {
		t.Errorf("%d of %d new Ingresses to existing backends changed haproxy.cfg", n, apps)
	}
	if n := changed(w.appRoute); n == 0 {
		t.Errorf("no new Ingress made as a loaded one changed haproxy.cfg: existingRoute corrects nothing")
	} else {
		t.Logf("made as a loaded Ingress, %d of %d changed haproxy.cfg", n, apps)
	}
}
