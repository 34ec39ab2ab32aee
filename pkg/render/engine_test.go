package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/haproxy-template/htc/pkg/render/funcs"
	"github.com/haproxy-template/htc/pkg/store"
)

func TestNewParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		cfg      string
		opts     []specOpt
		template string
		line     int
		reason   string
	}{
		{
			name: "haproxy.cfg", cfg: "global\n  daemon\n{{ if }}\n",
			template: "haproxy.cfg", line: 3,
			reason: "template haproxy.cfg line 3: missing value for if",
		},
		{
			name: "unclosed action", cfg: "global\n\n\n{{ .x \n",
			template: "haproxy.cfg", line: 5,
			reason: "template haproxy.cfg line 5: unclosed action started at line 4",
		},
		{
			name: "snippet", cfg: `{{ template "backend-name" . }}`,
			opts:     []specOpt{withSnippet("backend-name", "ok\n{{ range }}\n{{ end }}")},
			template: "backend-name", line: 2,
			reason: "template backend-name line 2: missing value for range",
		},
		{
			name: "map", cfg: "x",
			opts:     []specOpt{withMap("host.map", "a\nb\n{{ end }}")},
			template: "map:host.map", line: 3,
			reason: "template map:host.map line 3: unexpected {{end}}",
		},
		{
			name: "file", cfg: "x", opts: []specOpt{withFile("errors/503.http", "{{ nope }}")},
			template: "file:errors/503.http", line: 1,
			reason: `template file:errors/503.http line 1: function "nope" not defined`,
		},
		{
			name: "cert", cfg: "x", opts: []specOpt{withCert("default.pem", "\n{{ }}")},
			template: "cert:default.pem", line: 2,
		},
		{
			name: "unknown template reference", cfg: "a\n\n{{ template \"backend-nme\" . }}",
			opts:     []specOpt{withSnippet("backend-name", "x")},
			template: "haproxy.cfg", line: 3,
			reason: `template haproxy.cfg line 3: {{ template "backend-nme" }}: no such template (neither a snippet nor a define)`,
		},
		{
			name: "unknown reference inside a snippet's branch", cfg: `{{ template "a" . }}`,
			opts:     []specOpt{withSnippet("a", "{{ if true }}\n{{ else }}{{ template \"b\" }}{{ end }}")},
			template: "a", line: 2,
		},
		{
			name: "define replacing haproxy.cfg", cfg: "real",
			opts:     []specOpt{withSnippet("evil", "\n{{ define \"haproxy.cfg\" }}fake{{ end }}")},
			template: "evil", line: 2,
			reason: `template evil line 2: template "haproxy.cfg" is defined twice (also by haproxy.cfg)`,
		},
		{
			name: "same define in two snippets", cfg: "x",
			opts: []specOpt{
				withSnippet("a", `{{ define "helper" }}1{{ end }}`),
				withSnippet("b", `{{ define "helper" }}2{{ end }}`),
			},
			template: "b", line: 1,
		},
		{
			name: "invalid map name", cfg: "x", opts: []specOpt{withMap("../etc/passwd", "x")},
			template: "map:../etc/passwd",
			reason:   `template map:../etc/passwd: invalid name: the name contains ".."; it must stay inside the bundle`,
		},
		{
			name: "absolute file name", cfg: "x", opts: []specOpt{withFile("/etc/passwd", "x")},
			template: "file:/etc/passwd",
		},
		{
			name: "bad extraContext", cfg: "x", opts: []specOpt{withExtra(`[1,2]`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(newSpec(tt.cfg, tt.opts...))
			pe := renderErr(t, err)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, pe.Reason)
			}
			if tt.template == "" {
				return
			}
			var te *TemplateError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.template, te.Template)
			assert.Equal(t, tt.line, te.Line)
			assert.Equal(t, te.Error(), pe.Reason)
		})
	}
}

func TestRemovedFunctionsDoNotParse(t *testing.T) {
	for _, fn := range []string{"env", "expandenv", "getHostByName", "now", "randAlphaNum", "uuidv4", "genPrivateKey", "htpasswd"} {
		t.Run(fn, func(t *testing.T) {
			_, err := New(newSpec(fmt.Sprintf("global\n{{ %s \"HOME\" }}", fn)))
			pe := renderErr(t, err)
			assert.Equal(t, fmt.Sprintf("template haproxy.cfg line 2: function %q not defined", fn), pe.Reason)
		})
	}
	// The rest of sprig is there.
	e := mustEngine(t, `{{ "a,b" | splitList "," | join "-" | upper }} {{ list 3 1 2 | sortAlpha }} {{ b64enc "x" }} {{ sha256sum "" | trunc 4 }}`)
	b, err := e.Render(context.Background(), Input{})
	require.NoError(t, err)
	assert.Equal(t, "A-B [1 2 3] eA== e3b0", b.Config)
}

func TestRenderBundle(t *testing.T) {
	e := mustEngine(t,
		"global\n  # {{ len .resources.ingresses.List }} ingresses\nfrontend f\n  use_backend %[req.hdr(host),map({{ pathFor \"map\" \"host.map\" }})]\n  errorfile 503 {{ pathFor \"file\" \"errors/503.http\" }}\n  bind :443 ssl crt {{ pathFor \"cert\" \"default.pem\" }}\n",
		withMap("host.map", `{{ range .resources.ingresses.List }}{{ field . "spec.rules[0].host" }} {{ template "backend-name" . }}
{{ end }}`),
		withFile("errors/503.http", "HTTP/1.0 503 Service Unavailable\n"),
		withCert("default.pem", "{{ .extraContext.pem }}"),
		withSnippet("backend-name", `{{ word (field . "metadata.namespace") }}_{{ word (field . "metadata.name") }}`),
		withExtra(`{"pem": "-----BEGIN-----"}`),
	)
	ing := newFakeReader(t, nsName,
		ingress("default", "web", "web.example.com", "web"),
		ingress("apps", "api", "api.example.com", "api"),
	)
	b, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": ing}, BaseDir: "/run/htc/x"})
	require.NoError(t, err)
	assert.Equal(t, "/run/htc/x", b.BaseDir)
	assert.Equal(t, "global\n  # 2 ingresses\nfrontend f\n  use_backend %[req.hdr(host),map(/run/htc/x/maps/host.map)]\n  errorfile 503 /run/htc/x/files/errors/503.http\n  bind :443 ssl crt /run/htc/x/certs/default.pem\n", b.Config)
	assert.Equal(t, map[string]string{"host.map": "api.example.com apps_api\nweb.example.com default_web\n"}, b.Maps)
	assert.Equal(t, map[string]string{"errors/503.http": "HTTP/1.0 503 Service Unavailable\n"}, b.Files)
	assert.Equal(t, map[string]string{"default.pem": "-----BEGIN-----"}, b.Certs)
}

func TestResourceAccessors(t *testing.T) {
	ing := newFakeReader(t, nsName,
		ingress("default", "web", "web.example.com", "web"),
		ingress("apps", "api", "api.example.com", "api"),
		ingress("apps", "admin", "admin.example.com", "admin"),
	)
	svc := newFakeReader(t, nsName, service("apps", "api"))
	in := Input{Stores: map[string]store.Reader{"ingresses": ing, "services": svc}}
	tests := []struct {
		name, tmpl, want, reason string
	}{
		{name: "List in store order", tmpl: `{{ range .resources.ingresses.List }}{{ .metadata.namespace }}/{{ .metadata.name }} {{ end }}`,
			want: "apps/admin apps/api default/web "},
		{name: "Len", tmpl: `{{ .resources.ingresses.Len }} {{ .resources.services.Len }}`, want: "3 1"},
		{name: "Get found", tmpl: `{{ with .resources.services.Get "apps" "api" }}{{ .metadata.name }}{{ end }}`, want: "api"},
		{name: "Get missing is nil", tmpl: `{{ if not (.resources.services.Get "apps" "nope") }}none{{ end }}`, want: "none"},
		{name: "Fetch by namespace", tmpl: `{{ range .resources.ingresses.Fetch "apps" }}{{ .metadata.name }},{{ end }}`, want: "admin,api,"},
		{name: "Fetch no keys is List", tmpl: `{{ len (.resources.ingresses.Fetch) }}`, want: "3"},
		{name: "Fetch nothing", tmpl: `{{ len (.resources.ingresses.Fetch "kube-system") }}`, want: "0"},
		{name: "lookup a Service per Ingress", tmpl: `{{ range .resources.ingresses.List }}{{ $svc := field . "spec.rules[0].http.paths[0].backend.service.name" }}{{ if not ($.resources.services.Get .metadata.namespace $svc) }}{{ fail (printf "Service '%s' not found" $svc) }}{{ end }}{{ end }}`,
			reason: "Service 'admin' not found"},
		{name: "Get with too few keys", tmpl: "\n{{ .resources.services.Get \"apps\" }}",
			reason: "template haproxy.cfg line 2: .resources.services.Get: want 2 keys (metadata.namespace, metadata.name), got 1"},
		{name: "Fetch with too many keys", tmpl: `{{ .resources.services.Fetch "a" "b" "c" }}`,
			reason: "template haproxy.cfg line 1: .resources.services.Fetch: want at most 2 keys (metadata.namespace, metadata.name), got 3"},
		{name: "unknown store", tmpl: "\n\n{{ range .resources.ingress.List }}{{ end }}",
			reason: "template haproxy.cfg line 3: .resources.ingress.List: no such store in .resources (the stores are the keys of spec.watchedResources)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := mustEngine(t, tt.tmpl).Render(context.Background(), in)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, renderErr(t, err).Reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, b.Config)
		})
	}
}

func TestExtraContext(t *testing.T) {
	e := mustEngine(t, `{{ .extraContext.port }} {{ .extraContext.big }} {{ .extraContext.ratio }} {{ range .extraContext.hosts }}{{ . }},{{ end }} {{ .extraContext.nested.flag }}`,
		withExtra(`{"port": 8080, "big": 1000000, "ratio": 0.5, "hosts": ["a", "b"], "nested": {"flag": true}}`))
	b, err := e.Render(context.Background(), Input{})
	require.NoError(t, err)
	assert.Equal(t, "8080 1000000 0.5 a,b, true", b.Config)

	// Unset extraContext is an empty map: optional keys are nil, not errors.
	e = mustEngine(t, `{{ if .extraContext.debug }}debug{{ else }}quiet{{ end }}`)
	b, err = e.Render(context.Background(), Input{})
	require.NoError(t, err)
	assert.Equal(t, "quiet", b.Config)
}

func TestDataContextJSONPath(t *testing.T) {
	e := mustEngine(t, "x", withExtra(`{"mode": "http"}`))
	in := Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName,
		ingress("default", "web", "web.example.com", "web"),
		ingress("apps", "api", "api.example.com", "api"),
	)}}
	for expr, want := range map[string]string{
		"{.resources.ingresses.List[0].metadata.name}":                              "api",
		"{.resources.ingresses.List[*].spec.rules[0].host}":                         "api.example.com web.example.com",
		"{.resources.ingresses.Len}":                                                "2",
		"{.extraContext.mode}":                                                      "http",
		`{.resources.ingresses.List[?(@.metadata.name=="web")].metadata.namespace}`: "default",
	} {
		jp := jsonpath.New("t")
		require.NoError(t, jp.Parse(expr))
		var buf bytes.Buffer
		require.NoError(t, jp.Execute(&buf, e.DataContext(in)), expr)
		assert.Equal(t, want, buf.String(), expr)
	}

	ctx := e.Context(in)
	res, ok := ctx["resources"].(map[string]*ResourceStore)
	require.True(t, ok)
	n, err := res["ingresses"].Len()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, map[string]any{"mode": "http"}, ctx["extraContext"])
}

func TestDeterministic(t *testing.T) {
	e := mustEngine(t, `{{ range $k, $v := .extraContext.labels }}{{ $k }}={{ $v }} {{ end }}|{{ keys .extraContext.labels | join "," }}|{{ values .extraContext.labels | join "," }}|{{ toJson .extraContext.labels }}|{{ range .resources.ingresses.List }}{{ .metadata.name }} {{ end }}`,
		withExtra(`{"labels": {"z": "1", "a": "2", "m": "3", "b": "4", "y": "5", "c": "6"}}`))
	in := Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName,
		ingress("b", "x", "h", "s"), ingress("a", "y", "h", "s"), ingress("a", "x", "h", "s"))}}
	first, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, `a=2 b=4 c=6 m=3 y=5 z=1 |a,b,c,m,y,z|2,4,6,3,5,1|{"a":"2","b":"4","c":"6","m":"3","y":"5","z":"1"}|x y x `, first.Config)
	for range 20 {
		again, err := e.Render(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, bundleText(first), bundleText(again))
		require.Equal(t, first.Sources(), again.Sources())
	}
}

func TestConcurrentRender(t *testing.T) {
	e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ $c := deepCopy . }}{{ $_ := set $c.metadata "seen" "yes" }}{{ $d := dict "host" (field . "spec.rules[0].host") }}{{ $_ := merge $d (dict "port" 80) }}{{ $d.host }}:{{ $d.port }} {{ $c.metadata.seen }} {{ pathFor "map" "m" }}
{{ end }}`, withMap("m", `{{ range .resources.ingresses.List }}{{ field . "metadata.name" | word }}{{ end }}`))
	var objs []map[string]any
	for i := range 50 {
		objs = append(objs, ingress("ns", fmt.Sprintf("ing%02d", i), fmt.Sprintf("h%d.example.com", i), "svc"))
	}
	in := Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName, objs...)}}
	want, err := e.Render(context.Background(), Input{Stores: in.Stores, BaseDir: "/b0"})
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				base := "/b0"
				if g%2 == 1 {
					base = "/b1"
				}
				b, err := e.Render(context.Background(), Input{Stores: in.Stores, BaseDir: base})
				if err != nil {
					errs <- err
					return
				}
				if base == "/b0" && b.Config != want.Config {
					errs <- errors.New("output differs")
					return
				}
				if base == "/b1" && !bytes.Contains([]byte(b.Config), []byte("/b1/maps/m")) {
					errs <- errors.New("pathFor used another render's BaseDir")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The stores' objects were never modified.
	for _, o := range objs {
		_, seen := o["metadata"].(map[string]any)["seen"]
		require.False(t, seen)
	}
}

func TestRenderCancellation(t *testing.T) {
	e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ field . "metadata.name" }}{{ end }}`, withMap("m", "x"))
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := e.Render(ctx, Input{})
		require.ErrorIs(t, err, context.Canceled)
		renderErr(t, err)
	})
	t.Run("during a template", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := newFakeReader(t, nsName, ingress("a", "b", "h", "s"))
		r.onList = cancel // the deadline passes while the template runs
		e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ end }}{{ .resources.ingresses.Len }}`)
		_, err := e.Render(ctx, Input{Stores: map[string]store.Reader{"ingresses": r}})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, "rendering did not finish: context canceled", renderErr(t, err).Reason)
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		<-ctx.Done()
		_, err := e.Render(ctx, Input{})
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestWithRealStore(t *testing.T) {
	ings, err := store.New(nsName)
	require.NoError(t, err)
	svcs, err := store.New(nsName)
	require.NoError(t, err)
	for _, o := range []map[string]any{
		ingress("default", "web", "web.example.com", "web"),
		ingress("apps", "api", "api.example.com", "api"),
	} {
		require.NoError(t, ings.Add(&unstructured.Unstructured{Object: o}))
	}
	require.NoError(t, svcs.Add(&unstructured.Unstructured{Object: service("apps", "api")}))
	e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ $svc := field . "spec.rules[0].http.paths[0].backend.service.name" }}{{ if $.resources.services.Get .metadata.namespace $svc }}{{ .metadata.name }} ok{{ else }}{{ .metadata.name }} missing{{ end }}
{{ end }}{{ len (.resources.ingresses.Fetch "apps") }}`)
	b, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": ings, "services": svcs}})
	require.NoError(t, err)
	assert.Equal(t, "api ok\nweb missing\n1", b.Config)
}

func TestFunctionSet(t *testing.T) {
	for _, name := range funcs.Removed() {
		_, ok := staticFuncs[name]
		assert.False(t, ok, name)
	}
	for _, name := range []string{"fail", "safe", "word", "quoteValue", "keys", "values", "toJson", "default", "dig", "sha256sum"} {
		assert.Contains(t, staticFuncs, name)
	}
	for name := range dynamicFuncs(newRenderState(nil, "")) {
		_, inSprig := staticFuncs[name]
		assert.True(t, inSprig || name == "pathFor" || name == "field" || name == "include" || name == "includeValue" || name == "result" || name == "addFile" || name == "each" || name == "fragments" || name == "emit" || name == "emitted" || name == "warn", "%s overrides nothing", name)
	}
	builtin := map[string]bool{"printf": true, "print": true, "println": true}
	for name := range guardedFuncs(newRenderState(nil, "")) {
		_, inSprig := staticFuncs[name]
		assert.True(t, inSprig || builtin[name] || name == "field", "%s overrides nothing", name)
	}
}

func TestNilReaderIsAMissingStore(t *testing.T) {
	_, err := mustEngine(t, `{{ .resources.ingresses.Len }}`).Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": nil}})
	assert.Equal(t, "template haproxy.cfg line 1: .resources.ingresses.Len: no such store in .resources (the stores are the keys of spec.watchedResources)", renderErr(t, err).Reason)
}
