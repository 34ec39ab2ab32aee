package examples_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// TestNginxMixCreatesThatChangeHAProxyCfg counts, of the first 40
// CREATEs of BenchmarkIngressLibrariesCreate (mixCreate: make
// bench-scale's ingress-nginx mix, a new Ingress to an existing
// Service; two of each class) over 200 Ingresses of the mix (the
// benchmark has 1,000: the k-th CREATE's Service is of class -k mod 20
// with either), those whose check runs haproxy -c on the whole bundle:
// their bundle differs from the live one in more than the maps HAProxy
// reads as plain strings, the maps it can check alone and the backend
// sections it can check alone. None does now. The classes with a backend
// of their own (affinity cookie: 10, backend-protocol HTTPS: 11) to the
// Service of an Ingress without it (11/9: class 10's Service is of class
// 10, its backend the same) add a backend section, which a stub
// configuration checks alone (before sections were checked alone, their
// CREATEs ran haproxy -c on the whole bundle). The CREATEs without one to
// the Service of such an Ingress (9/11) change maps only: the Service
// port's plain backend is declared whenever an Ingress routes to it
// (before, they added it, a stub too). Rewrite-target (5, 15) with the workload's path
// /app(/|$)(.*) on a host of its own changes maps only: its location is
// an entry of rxexact.map and rxprefix.map (ngx-regex-literal), which
// HAProxy reads as plain strings (before, it was a line of the regular
// expression map, and its 4 CREATEs ran haproxy -c on a stub that loads
// that map; before maps were checked alone, on the whole bundle).
func TestNginxMixCreatesThatChangeHAProxyCfg(t *testing.T) {
	const n, creates = 200, 40
	p := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) { cfg.Spec.ValidationTests = nil })
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		scaleMix(ing, i, true)
	}
	live := store.ReadOnly(gatewayStores(t, cfg, state))
	ctx := context.Background()
	v := p.Check(ctx, live)
	require.True(t, v.Passed(), v.Reason)
	byClass := map[string]int{}  // "class/app's class" of those that ran haproxy -c on the whole bundle
	alone := map[int]int{}       // class -> CREATEs whose maps a stub checked
	sections := map[string]int{} // "class/app's class" -> CREATEs whose added backend sections a stub checked
	count := 0
	for k := range creates {
		set, err := live.WithChange("ingresses", store.Change{Operation: store.Create, Object: mixCreate(k, n, "nginx", false)})
		require.NoError(t, err)
		v, trace := p.CheckWith(ctx, set, dryrun.CheckOptions{})
		require.True(t, v.Passed(), v.Reason)
		class := fmt.Sprintf("%d/%d", k%20, ((k*7919)%n)%20)
		if !trace.SemanticReused {
			count++
			byClass[class]++
		}
		if trace.MapsCheckedAlone > 0 {
			alone[k%20]++
		}
		if trace.SectionsCheckedAlone > 0 {
			sections[class] += trace.SectionsCheckedAlone
		}
	}
	t.Logf("CREATEs that ran haproxy -c on the whole bundle: %d of %d: by class/app's class %v; checked maps alone, by class: %v; added backend sections checked alone, by class/app's class: %v",
		count, creates, byClass, alone, sections)
	assert.Empty(t, byClass)
	assert.Zero(t, count)
	assert.Empty(t, alone, "rewrite-target's location is in maps of plain strings")
	assert.Equal(t, map[string]int{"11/9": 2}, sections, "a new backend section each, checked alone")
}

// TestNginxAnotherIngressWithWrittenValuesIsMapOnly: a value HAProxy
// needs as a constant (a rewrite-target with its path, a source range, a
// limit-whitelist, a CORS origin list, basic authentication by a Secret
// and realm, a canary's header or cookie) is a line shared by every location or Ingress with the same
// value, which a map points at: a new Ingress with a value some Ingress
// has already (a source range spelled otherwise too) leaves haproxy.cfg
// as it was and changes maps only, so its check reuses the haproxy -c
// run that accepted the state before; one with a new value adds a line
// and runs it. A location of a regex host (use-regex, rewrite-target)
// whose path is a literal with one of the endings ngx-regex-literal
// knows is an entry of maps of plain strings; one of another regular
// expression is a line of the regular expression map, which HAProxy
// compiles: a stub configuration that loads only that map checks it
// (alone), and the whole bundle's check reuses the run.
func TestNginxAnotherIngressWithWrittenValuesIsMapOnly(t *testing.T) {
	p := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) { cfg.Spec.ValidationTests = nil })
	rewrite := map[string]string{"use-regex": "true", "rewrite-target": "/$2"}
	for _, tc := range []struct {
		kind          string
		first, second map[string]string
		path          string // of both Ingresses: "Type path"
		sameCfg       bool   // haproxy.cfg is unchanged
		mapOnly       bool
		alone         bool // a stub checked the regular expression map
		canary        bool // first and second are canaries of plain Ingresses of both hosts
	}{
		{"rewrite-target", rewrite, rewrite, "ImplementationSpecific /app(/|$)(.*)", true, true, false, false},
		{"rewrite-target, a path of another regular expression", rewrite, rewrite, "ImplementationSpecific /app/([0-9]+)(.*)", true, true, true, false},
		{"rewrite-target, another target", rewrite, map[string]string{"use-regex": "true", "rewrite-target": "/x/$2"}, "ImplementationSpecific /app(/|$)(.*)", false, false, false, false},
		{"rewrite-target without captures", map[string]string{"rewrite-target": "/"}, map[string]string{"rewrite-target": "/"}, "Prefix /app", true, true, false, false},
		{"use-regex with a literal path", map[string]string{"use-regex": "true"}, map[string]string{"use-regex": "true"}, "Prefix /app", true, true, false, false},
		{"use-regex with a regular expression", map[string]string{"use-regex": "true"}, map[string]string{"use-regex": "true"}, "ImplementationSpecific /v[0-9]+/app", true, true, true, false},
		{"whitelist-source-range", map[string]string{"whitelist-source-range": "10.0.0.0/8, 192.168.0.0/16"}, map[string]string{"whitelist-source-range": "10.0.0.0/8,192.168.0.0/16"}, "Prefix /", true, true, false, false},
		{"whitelist-source-range, another range", map[string]string{"whitelist-source-range": "10.0.0.0/8"}, map[string]string{"whitelist-source-range": "10.0.0.0/16"}, "Prefix /", false, false, false, false},
		{"denylist-source-range", map[string]string{"denylist-source-range": "10.1.0.0/16"}, map[string]string{"denylist-source-range": "10.1.0.0/16"}, "Prefix /", true, true, false, false},
		{"limit-whitelist", map[string]string{"limit-rps": "5", "limit-whitelist": "10.0.0.0/8"}, map[string]string{"limit-rps": "50", "limit-whitelist": "10.0.0.0/8"}, "Prefix /", true, true, false, false},
		{"cors-allow-origin list", map[string]string{"enable-cors": "true", "cors-allow-origin": "https://a.example.com, https://*.b.example.com"},
			map[string]string{"enable-cors": "true", "cors-allow-origin": "https://a.example.com, https://*.b.example.com", "cors-max-age": "60"}, "Prefix /", true, true, false, false},
		{"auth-type basic", map[string]string{"auth-type": "basic", "auth-secret": "users", "auth-realm": "Staff"}, map[string]string{"auth-type": "basic", "auth-secret": "users", "auth-realm": "Staff"}, "Prefix /", true, true, false, false},
		{"auth-type basic, another realm", map[string]string{"auth-type": "basic", "auth-secret": "users", "auth-realm": "Staff"}, map[string]string{"auth-type": "basic", "auth-secret": "users", "auth-realm": "Other"}, "Prefix /", false, false, false, false},
		{"canary-by-header and -cookie", map[string]string{"canary": "true", "canary-by-header": "X-Canary", "canary-by-cookie": "canary"}, map[string]string{"canary": "true", "canary-weight": "10", "canary-by-header": "X-Canary", "canary-by-cookie": "canary"}, "Prefix /", true, true, false, true},
		{"canary-by-header-value", map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-value": "v2"}, map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-value": "v2"}, "Prefix /", true, true, false, true},
		{"canary-by-header-pattern", map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-pattern": "^v[3-9]$"}, map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-pattern": "^v[3-9]$"}, "Prefix /", true, true, false, true},
		{"canary-by-header, another header", map[string]string{"canary": "true", "canary-by-header": "X-Canary"}, map[string]string{"canary": "true", "canary-by-header": "X-Other"}, "Prefix /", false, false, false, true},
	} {
		stateWith := func(second bool) store.Set {
			parts := []string{serviceDoc("default", "echo"), secretDoc("default", "users", map[string][]byte{"auth": []byte(htpasswd)}),
				ingressDoc("default", "first", tc.first, map[string][]string{"first.example.com": {tc.path + " echo:80"}})}
			if second {
				parts = append(parts, ingressDoc("default", "second", tc.second, map[string][]string{"second.example.com": {tc.path + " echo:80"}}))
			}
			if tc.canary {
				for _, h := range []string{"first", "second"} {
					parts = append(parts, ingressDoc("default", "main-"+h, nil, map[string][]string{h + ".example.com": {tc.path + " echo:80"}}))
				}
			}
			s := p.Model.NewStores()
			for key, objs := range ngxObjects(t, docs(parts...), nil) {
				for _, o := range objs {
					require.NoError(t, s[key].Add(unstructuredOf(o)))
				}
			}
			return store.ReadOnly(s)
		}
		before, err := p.Render(context.Background(), stateWith(false))
		require.NoError(t, err, tc.kind)
		after, err := p.Render(context.Background(), stateWith(true))
		require.NoError(t, err, tc.kind)
		assert.Equal(t, tc.sameCfg, before.Config == after.Config, "%s: haproxy.cfg unchanged", tc.kind)
		v := p.Check(context.Background(), stateWith(false))
		require.True(t, v.Passed(), "%s: %s", tc.kind, v.Reason)
		v, trace := p.CheckWith(context.Background(), stateWith(true), dryrun.CheckOptions{})
		require.True(t, v.Passed(), "%s: %s", tc.kind, v.Reason)
		assert.Equal(t, tc.mapOnly, trace.SemanticReused, "%s: map-only", tc.kind)
		assert.Equal(t, tc.alone, trace.MapsCheckedAlone > 0, "%s: a map checked alone", tc.kind)
	}
}

// TestNginxSharedLinesOfOneIdFailTheRender: ngx-shared-lines writes the
// lines of distinct values, each guarded by its id; two values of one id
// (a sha256 collision) would give a location the other's line too, so
// the render fails instead. Without entries it writes nothing.
func TestNginxSharedLinesOfOneIdFailTheRender(t *testing.T) {
	for _, tc := range []struct {
		lines, want string // want: the text, or "error: ..." the failure's end
	}{
		{`dict`, ""},
		{`dict "b" (dict "id" "i2" "line" "  L2") "a" (dict "id" "i1" "line" "  L1")`, "\n  http-request set-var(txn.v) var(txn.ing),map(/m)\n  L1\n  L2"},
		{`dict "a" (dict "id" "i1" "line" "  L1") "b" (dict "id" "i1" "line" "  L2")`, "error: two test lines have the id i1"},
	} {
		e, _ := ngxEngineWith(t, nil, func(spec *config.HAProxyTemplateConfigSpec) {
			spec.ValidationTests = nil
			spec.HAProxyConfig.Template = `{{ include "ngx-shared-lines" (dict "lines" (` + tc.lines + `) "var" "txn.v" "key" "ing" "map" "/m" "what" "test") }}`
		})
		b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, mustNgxConfig(t), nil)), BaseDir: "/b"})
		if strings.HasPrefix(tc.want, "error: ") {
			require.Error(t, err, tc.lines)
			assert.Contains(t, err.Error(), strings.TrimPrefix(tc.want, "error: "))
			continue
		}
		require.NoError(t, err, tc.lines)
		assert.Equal(t, tc.want, b.Config, tc.lines)
	}
}

// mustNgxConfig is the ingress-nginx library's configuration.
func mustNgxConfig(t *testing.T) *config.HAProxyTemplateConfig {
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	return cfg
}

// TestNginxMixCreatesAsTheWebhookAdmitsThem: the CREATEs of
// TestNginxMixCreatesThatChangeHAProxyCfg (one of each class) decided as
// the webhook and BenchmarkIngressLibrariesCreate decide them: an
// Admitter whose baseline is the live state diagnosed with its records
// (Record), the library's embedded validation tests run as in every
// check. None runs haproxy -c on the whole bundle: the one that adds a
// backend section (11, HTTPS to the Service of class 9) has it checked
// alone against the live run's sections (9, to the Service of class 11,
// uses its plain backend, declared beside the HTTPS one). The checker keeps the bases of few accepted runs
// (pkg/haproxy addedKeys); the embedded tests' bundles that haproxy -c
// runs after the live one must not push the live one out (a validation
// test with rewrite-target did: its CREATEs ran the whole haproxy -c).
func TestNginxMixCreatesAsTheWebhookAdmitsThem(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("no haproxy in PATH")
	}
	const n = 200
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin, TempDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(checker.Wait)
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	require.NoError(t, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		ing["spec"].(map[string]any)["ingressClassName"] = "nginx"
		scaleMix(ing, i, true)
	}
	stores := gatewayStores(t, cfg, state)
	ctx := context.Background()
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	live, _ := p.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{MaxRounds: 4, Record: true})
	require.Nil(t, live.Verdict().Err)
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: live})
	whole := map[int]bool{}
	sections := map[int]bool{}
	for k := range 20 {
		req := admission.Request{Change: watched.Change{Resource: ingressesResource, Operation: store.Create, Object: mixCreate(k, n, "nginx", false)}}
		d, r := a.Decide(ctx, req)
		require.True(t, d.Allowed, d.Reason)
		if _, ran := r.Trace.Durations[phase.Semantic]; ran && !r.Trace.SemanticReused {
			whole[k] = true
		}
		if r.Trace.SectionsCheckedAlone > 0 {
			sections[k] = true
		}
		assert.Zero(t, r.Trace.MapsCheckedAlone, "class %d: no regular expression map changes", k)
	}
	assert.Empty(t, whole, "classes whose CREATE ran haproxy -c on the whole bundle")
	assert.Equal(t, map[int]bool{11: true}, sections, "classes whose added backend section a stub checked")
}
