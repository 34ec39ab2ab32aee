package examples_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// benchCreate is the k-th timed "CREATE (new route, existing backend)"
// of run 1 of make bench-scale over n apps (test/scale: harness.run,
// createObject): Ingress bench-r1-s<k> to the Service of app
// (k*7919+104729) mod n, in its namespace; under WORKLOAD=ingress-nginx
// both carry the annotations of the class testutil.NginxMixClass gives
// their names. It returns the app and both classes.
func benchCreate(k, n int) (app, class, appClass int) {
	app = (k*7919 + 1*104729) % n
	ns := fmt.Sprintf("ns%d", app%50)
	return app, testutil.NginxMixClass(ns, fmt.Sprintf("bench-r1-s%d", k)), testutil.NginxMixClass(ns, fmt.Sprintf("app%d", app))
}

// ngxBackendKind is the backend settings of the mix's class c under the
// ingress-nginx library: "cookie" (affinity, 10), "https"
// (backend-protocol HTTPS, 11) or "" (the Service port's plain backend).
func ngxBackendKind(c int) string {
	a := testutil.NginxMixAnnotations(c)
	switch {
	case a["affinity"] != "":
		return "cookie"
	case a["backend-protocol"] != "":
		return "https"
	}
	return ""
}

// addsBackend reports whether the CREATE of class to the Service of an
// Ingress of appClass (the only one routing to it) adds a backend
// section under the ingress-nginx library: it has backend settings, and
// they differ. (The Service port's plain backend is declared whenever an
// Ingress routes to it, with settings or not: before, a CREATE without
// settings to the Service of one with them added it too.)
func addsBackend(class, appClass int) bool {
	kind := ngxBackendKind(class)
	return kind != "" && kind != ngxBackendKind(appClass)
}

// TestNginxControllerBenchCreatesAsTheWebhookAdmitsThem: the 20 timed
// CREATEs of make bench-scale N=1000 WORKLOAD=ingress-nginx (benchCreate:
// classes by a hash of the names, as the workload gives them, not k mod
// 20 as BenchmarkIngressLibrariesCreate's mix), decided as the webhook
// decides them over 1,000 Ingresses of the workload, the library's
// embedded tests run as in every check. Those that add a backend section
// (addsBackend: they have backend settings, which their Service's Ingress
// has not) have it checked alone by a stub haproxy -c; none runs haproxy
// -c on the whole bundle. The classes are independent: about one pair in
// 5.4 differs in backend settings (1 - 0.9² - 2·0.05²), 4 of these 20 (3,
// 7, 15, 16; at 10,000 apps 2: 0 and 7), where the examples' mix pairs
// class k with -k mod 20 (10 with 10) and differs in one in 10. All 4 (2)
// added a backend section before the library declared every Service
// port's plain backend; now only those with settings to a Service without
// them do: 7 (at 10,000 apps 7 too), about one in 10.7 (2·0.05·0.95).
// Its shape learned in a quiet period (Admitter.LearnShapes), it runs no
// stub either.
func TestNginxControllerBenchCreatesAsTheWebhookAdmitsThem(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("no haproxy in PATH")
	}
	want := func(n int) map[int]bool {
		out := map[int]bool{}
		for k := range 20 {
			if _, class, appClass := benchCreate(k, n); addsBackend(class, appClass) {
				out[k] = true
			}
		}
		return out
	}
	assert.Equal(t, map[int]bool{7: true}, want(1000), "the CREATEs adding a backend at 1,000 apps")
	assert.Equal(t, map[int]bool{7: true}, want(10000), "at 10,000 apps")

	const n = 1000
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin, TempDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(checker.Wait)
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	require.NoError(t, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		scaleMix(ing, testutil.NginxMixClass(fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)), true)
	}
	stores := gatewayStores(t, cfg, state)
	ctx := context.Background()
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	live, _ := p.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{MaxRounds: 4, Record: true})
	require.Nil(t, live.Verdict().Err)
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: live})
	// The controller learns the stubs of the live backends' common shapes
	// in a quiet period, as make bench-scale waits for one before its
	// CREATEs: the one adding a backend section then runs no stub either.
	require.Positive(t, a.LearnShapes(ctx), "stubs run to learn the live shapes")
	whole, sections, stubs := map[int]bool{}, map[int]bool{}, map[int]bool{}
	children := childrenCPU()
	for k := range 20 {
		app, class, appClass := benchCreate(k, n)
		ing := mixIngress(k, app, class, "nginx")
		ing.SetName(fmt.Sprintf("bench-r1-s%d", k))
		d, r := a.Decide(ctx, admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: ing}})
		require.True(t, d.Allowed, d.Reason)
		if _, ran := r.Trace.Durations[phase.Semantic]; ran && !r.Trace.SemanticReused {
			whole[k] = true
		}
		if r.Trace.SectionsCheckedAlone > 0 {
			sections[k] = true
			if !r.Trace.SectionsShapeKnown {
				stubs[k] = true
			}
		}
		t.Logf("CREATE %d: class %d to the Service of app %d (class %d): haproxy -c on the whole bundle %v, backend sections checked alone %d",
			k, class, app, appClass, whole[k], r.Trace.SectionsCheckedAlone)
	}
	t.Logf("haproxy CPU per CREATE: %.2f ms", float64(childrenCPU()-children)/1e6/20)
	assert.Empty(t, whole, "CREATEs that ran haproxy -c on the whole bundle")
	assert.Equal(t, want(n), sections, "CREATEs whose added backend section a stub checked")
	assert.Empty(t, stubs, "CREATEs that ran a stub: their shape was not learned")
}
