package examples_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestNginxLibraryRendersAsBefore renders the ingress-nginx library and
// the same library with its templates before its shortcuts
// (ingress-nginx/testdata/before.yaml: ngx-annotations run for every
// Ingress, ngx-settings and ngx-tls even without values, ngx-flavour once
// per backend, every part of them whatever values are set, ngx-bytes with
// a regular expression) over the fixtures of every embedded validation test and
// over generated states (Ingresses without annotations, with others than
// nginx's, and with random nginx annotations of every type, good and bad
// values, canaries, TLS, default backends, regex hosts), under three
// extraContexts: both give the same bundle byte for byte (files, status;
// the source map with its reads each once), the same warnings about each Ingress, or fail with the
// same reason about the same objects (template line numbers aside).
func TestNginxLibraryRendersAsBefore(t *testing.T) {
	outcomes := map[string]int{}
	extras := []map[string]any{
		{},
		{"allowCrossNamespaceSecrets": true, "enableSSLPassthrough": true, "watchIngressWithoutClass": true, "statusAddresses": []any{"203.0.113.7"}},
		{"unknownAnnotations": "Deny"},
	}
	type pair struct{ current, before *htcrender.Engine }
	engines := make([]pair, len(extras))
	var table map[string]map[string]any
	var types map[string]any
	var cfg *config.HAProxyTemplateConfig // the watched resources are the same in all
	for i, x := range extras {
		current, c := ngxEngine(t, x)
		before, _ := ngxEngineWith(t, x, ngxBeforeTemplates(t))
		engines[i] = pair{current, before}
		if i == 0 {
			cfg = c
			var extra struct {
				Annotations map[string]map[string]any `json:"annotations"`
				ValueTypes  map[string]any            `json:"valueTypes"`
			}
			require.NoError(t, json.Unmarshal(cfg.Spec.ExtraContext.Raw, &extra))
			table, types = extra.Annotations, extra.ValueTypes
			// Every state of the validation tests.
			for name, tc := range cfg.Spec.ValidationTests {
				objs := map[string][]map[string]any{}
				for key, raws := range tc.Fixtures {
					for _, raw := range raws {
						o := map[string]any{}
						require.NoError(t, json.Unmarshal(raw.Raw, &o), name)
						objs[key] = append(objs[key], o)
					}
				}
				outcomes[compareNginxRenders(t, current, before, cfg, objs, "validation test "+name)]++
			}
		}
	}
	for v := range types {
		require.Contains(t, ngxTypeSamples, v, "a sample value of the library's value type %s", v)
	}
	for i := range 100 {
		size := 6
		if i%50 == 0 {
			size = 30
		}
		r := rand.New(rand.NewPCG(uint64(i), 34))
		objs := generateNginxState(r, size, table)
		e := engines[i%len(engines)]
		outcomes[compareNginxRenders(t, e.current, e.before, cfg, objs, fmt.Sprintf("state %d", i))]++
	}
	t.Logf("outcomes: %v", outcomes)
	assert.Greater(t, outcomes["renders"]+outcomes["warns"], 45, "many render")
	assert.Greater(t, outcomes["warns"], 35, "many render with warnings")
	assert.Greater(t, outcomes["fails"], 100, "many fail, with the reasons of bad values")
}

// compareNginxRenders renders objs with both engines and asserts that
// they agree (see TestNginxLibraryRendersAsBefore); it returns
// "renders", "warns" (renders, with a warning) or "fails".
func compareNginxRenders(t *testing.T, current, before *htcrender.Engine, cfg *config.HAProxyTemplateConfig, objs map[string][]map[string]any, what string) string {
	t.Helper()
	stores := store.ReadOnly(gatewayStores(t, cfg, objs))
	in := htcrender.Input{Stores: stores, BaseDir: "/b", Full: true}
	got, gotErr := current.Render(context.Background(), in)
	want, wantErr := before.Render(context.Background(), in)
	if wantErr != nil {
		require.Error(t, gotErr, "%s: %s", what, asBefore(nil, wantErr))
		elided := func(err error) string { return templateLine.ReplaceAllString(exactly(nil, err), "template T line N") }
		assert.Equal(t, elided(wantErr), elided(gotErr), what)
		return "fails"
	}
	require.NoError(t, gotErr, what)
	assert.Equal(t, ngxOutcome(want), ngxOutcome(got), what)
	warns := false
	for _, ing := range objs["ingresses"] {
		md := ing["metadata"].(map[string]any)
		ns, name := fmt.Sprint(md["namespace"]), fmt.Sprint(md["name"])
		w := want.WarningsAbout("Ingress", ns, name)
		assert.Equal(t, w, got.WarningsAbout("Ingress", ns, name), "%s: the warnings about Ingress %s/%s", what, ns, name)
		warns = warns || len(w) > 0
	}
	if warns {
		return "warns"
	}
	return "renders"
}

// ngxOutcome is a render's bundle as text: every file, the source map
// with each read once (a read the render made again, a pair the source
// map may repeat, says nothing more) and the status documents.
func ngxOutcome(b *bundle.Bundle) string {
	var src bundle.Sources // none: a render that names no object
	if s := b.Sources(); s != nil {
		src = *s
	}
	seen := map[bundle.Read]bool{}
	src.Reads = slices.DeleteFunc(slices.Clone(src.Reads), func(r bundle.Read) bool {
		again := seen[r]
		seen[r] = true
		return again
	})
	status, _ := b.Target(bundle.StatusTarget)
	return asBefore(b, nil) + fmt.Sprintf("\n== sources\n%+v", src) + "\n== status\n" + status
}

// ngxBeforeTemplates puts the library's templates before its shortcuts
// (ingress-nginx/testdata/before.yaml: the snippets they changed) into
// spec.
func ngxBeforeTemplates(t *testing.T) func(*config.HAProxyTemplateConfigSpec) {
	raw, err := os.ReadFile("ingress-nginx/testdata/before.yaml")
	require.NoError(t, err)
	var before struct {
		Spec config.HAProxyTemplateConfigSpec `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &before))
	require.NotEmpty(t, before.Spec.TemplateSnippets)
	return func(spec *config.HAProxyTemplateConfigSpec) {
		for name, s := range before.Spec.TemplateSnippets {
			// A snippet config.yaml no longer has is one only the
			// snippets before include (ngx-served): added.
			if cur, ok := spec.TemplateSnippets[name]; ok {
				require.NotEqual(t, cur.Template, s.Template, "snippet %s is as before", name)
			}
			spec.TemplateSnippets[name] = s
		}
	}
}

// ngxEngineWith is ngxEngine after edit.
func ngxEngineWith(t testing.TB, extra map[string]any, edit func(*config.HAProxyTemplateConfigSpec)) (*htcrender.Engine, *config.HAProxyTemplateConfig) {
	t.Helper()
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	withExtra(t, extra)(&cfg.Spec)
	edit(&cfg.Spec)
	e, err := htcrender.New(&cfg.Spec)
	require.NoError(t, err)
	return e, cfg
}

// ngxTypeSamples are values of each of the library's value types: good
// ones first, then one or two the type's expression or the library
// refuses.
var ngxTypeSamples = map[string][]string{
	"bool":         {"true", "false", "1", "yes"},
	"count":        {"5", "100", "0", "x"},
	"seconds":      {"30", "120", "5s"},
	"size":         {"8m", "0", "1000", "8 k"},
	"path":         {"/app", "/", "app"},
	"pathValue":    {"/prefix", "/a b"},
	"rewrite":      {"/$2", "/", "/new/$1", "/$host"},
	"url":          {"https://www.example.com/moved", "ftp://x.example.com/"},
	"cidrs":        {"10.0.0.0/8, 192.168.0.0/16", "127.0.0.1", "10.0.0.0/33", "x"},
	"name":         {"X-Canary", "route", "a;b"},
	"serviceName":  {"echo", "fallback", "missing", "Bad_"},
	"secretRef":    {"tls", "tls", "tls", "other/tls", "missing", "a/b/c"},
	"hostName":     {"internal.example.com", "a b"},
	"hostList":     {"alias.example.com, *.w2.example.com", "a b.example.com"},
	"realm":        {"Restricted Area", `a"b`},
	"regex":        {"^v[0-9]$", "always", "("},
	"headerList":   {"X-Custom, Content-Type", "a;b"},
	"exposeList":   {"*", "X-Total", "a;b"},
	"methodList":   {"GET, POST", "GET;"},
	"origins":      {"*", "https://a.example.com, https://*.b.example.com:8443", "ftp"},
	"codes":        {"404,503", "200"},
	"nextUpstream": {"error timeout http_502", "off", "error bogus"},
	"hashBy":       {"$request_uri", "$host$arg_x", "$request_uri", "$binary_remote_addr", "$request_uri;"},
}

// ngxNeeds are annotations the library refuses without another one.
var ngxNeeds = map[string]string{"auth-type": "auth-secret", "proxy-ssl-name": "proxy-ssl-secret",
	"proxy-ssl-server-name": "proxy-ssl-secret", "proxy-ssl-verify": "proxy-ssl-secret"}

// generateNginxState makes an IngressClass, Services (by port name and
// number, ExternalName, without ready endpoints), a Secret in each of
// two namespaces (a certificate, a CA and an htpasswd file) and about size Ingresses: a third
// without annotations, some with only others than nginx's, the rest with
// one to four of the table's annotations (a value of its type, bad one
// time in thirty; now and then a refused, unknown or empty one), a tenth of them
// canaries of a shared host. Hosts are the Ingress's own or shared
// (overlaps, regex hosts, canaries meet); paths of every type.
func generateNginxState(r *rand.Rand, size int, table map[string]map[string]any) map[string][]map[string]any {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	out := map[string][]map[string]any{
		"ingressclasses": {{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "nginx"},
			"spec": map[string]any{"controller": "haproxy-template.io/htc"}},
			// served by its controller; another controller's is not
			{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "mine"},
				"spec": map[string]any{"controller": "haproxy-template.io/htc"}},
			{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "theirs"},
				"spec": map[string]any{"controller": "example.com/other"}}},
	}
	for _, ns := range []string{"default", "other"} {
		for _, name := range []string{"echo", "api", "fallback", "ext"} {
			spec := map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}, map[string]any{"name": "https", "port": int64(443)}}}
			if name == "ext" {
				spec["type"], spec["externalName"] = "ExternalName", "ext.example.com"
			}
			out["services"] = append(out["services"], map[string]any{"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
			if name != "ext" && r.IntN(4) > 0 {
				out["endpoints"] = append(out["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
					"metadata":  map[string]any{"name": name + "-a", "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
					"ports":     []any{map[string]any{"name": "http", "port": int64(8080)}, map[string]any{"name": "https", "port": int64(8443)}},
					"endpoints": []any{map[string]any{"addresses": []any{"10.0.0.1"}, "conditions": map[string]any{"ready": r.IntN(3) > 0}}}})
			}
		}
		out["secrets"] = append(out["secrets"],
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "tls", "namespace": ns},
				"data": map[string]any{"tls.crt": b64("CERT"), "tls.key": b64("KEY"), "ca.crt": b64("CA"),
					"auth": b64(pick("user:$2y$05$abcdefghijklmnopqrstuv\n", "user:$2y$05$abcdefghijklmnopqrstuv\n", "# none\n", "user:plain\n"))}})
	}
	var names, refused []string // the table's annotations, sorted
	for _, k := range slices.Sorted(maps.Keys(table)) {
		if table[k]["status"] == "refused" {
			refused = append(refused, k)
		} else {
			names = append(names, k)
		}
	}
	value := func(spec map[string]any) string {
		var good, bad []string
		if oneOf, ok := spec["oneOf"].([]any); ok {
			for _, o := range oneOf {
				good = append(good, fmt.Sprint(o))
			}
			bad = []string{"bogus"}
		} else if samples, ok := ngxTypeSamples[fmt.Sprint(spec["type"])]; ok {
			good, bad = samples[:len(samples)-1], samples[len(samples)-1:]
		} else {
			return "x" // refused: any value
		}
		if r.IntN(30) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	pfx := "nginx.ingress.kubernetes.io/"
	paths := []string{"/", "/api", "/app(/|$)(.*)", "/static/", "/v1"}
	for i := range size {
		ns := "default"
		if r.IntN(6) == 0 {
			ns = "other"
		}
		ann := map[string]any{}
		canary := r.IntN(10) == 0
		switch k := r.IntN(10); {
		case canary:
			ann[pfx+"canary"] = "true"
			for range r.IntN(3) {
				n := pick("canary-weight", "canary-by-header", "canary-by-header-value", "canary-by-header-pattern", "canary-by-cookie", "affinity", "load-balance", "proxy-body-size")
				ann[pfx+n] = value(table[n])
			}
		case k < 3: // none
		case k == 3:
			ann["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
			ann["example.com/team"] = "a"
		default:
			for range 1 + r.IntN(4) {
				n := names[r.IntN(len(names))]
				ann[pfx+n] = value(table[n])
				if needs := ngxNeeds[n]; needs != "" && ann[pfx+needs] == nil {
					ann[pfx+needs] = value(table[needs])
				}
			}
			if r.IntN(40) == 0 {
				ann[pfx+refused[r.IntN(len(refused))]] = "x"
			}
			if r.IntN(15) == 0 {
				ann[pfx+"not-an-annotation"] = "x"
			}
			if r.IntN(15) == 0 {
				ann[pfx+pick("proxy-body-size", "use-regex", "canary")] = ""
			}
		}
		var rules []any
		for j := range 1 + r.IntN(2) {
			host := fmt.Sprintf("h%d-%d.example.com", i, j)
			if canary || r.IntN(4) == 0 {
				host = pick("shared.example.com", "*.w.example.com", "")
			}
			var ps []any
			regex := ann[pfx+"use-regex"] == "true" || ann[pfx+"rewrite-target"] != nil
			for _, k := range r.Perm(len(paths))[:1+r.IntN(3)] {
				port := map[string]any{"name": "http"}
				if r.IntN(3) == 0 {
					port = map[string]any{"number": int64(pick2(r, 80, 443))}
				}
				path := paths[k]
				if strings.Contains(path, "(") && !regex {
					path = "/app"
				}
				p := map[string]any{"path": path, "pathType": pick("Prefix", "Prefix", "Exact", "ImplementationSpecific"),
					"backend": map[string]any{"service": map[string]any{"name": pick("echo", "echo", "api", "ext"), "port": port}}}
				if canary {
					p["path"], p["pathType"] = "/", "Prefix"
				}
				ps = append(ps, p)
				if canary {
					break
				}
			}
			rule := map[string]any{"http": map[string]any{"paths": ps}}
			if host != "" {
				rule["host"] = host
			}
			rules = append(rules, rule)
		}
		spec := map[string]any{"rules": rules}
		switch r.IntN(12) {
		case 0:
			ann["kubernetes.io/ingress.class"] = "nginx"
		case 1:
			spec["ingressClassName"] = pick("other", "mine", "theirs")
		case 2: // no class
		default:
			spec["ingressClassName"] = "nginx"
		}
		if r.IntN(6) == 0 {
			spec["defaultBackend"] = map[string]any{"service": map[string]any{"name": "echo", "port": map[string]any{"number": int64(80)}}}
			if r.IntN(3) == 0 {
				delete(spec, "rules")
			}
		}
		if r.IntN(5) == 0 {
			tls := map[string]any{"secretName": "tls"}
			if r.IntN(2) == 0 {
				tls["hosts"] = []any{fmt.Sprintf("h%d-0.example.com", i)}
			}
			spec["tls"] = []any{tls}
		}
		md := map[string]any{"name": fmt.Sprintf("ing%d", i), "namespace": ns}
		if len(ann) > 0 {
			md["annotations"] = ann
		}
		if r.IntN(2) == 0 {
			md["creationTimestamp"] = fmt.Sprintf("2026-01-01T00:00:%02dZ", r.IntN(60))
		}
		out["ingresses"] = append(out["ingresses"], map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md, "spec": spec})
	}
	return out
}

// pick2 is one of a and b.
func pick2(r *rand.Rand, a, b int) int {
	if r.IntN(2) == 0 {
		return a
	}
	return b
}
