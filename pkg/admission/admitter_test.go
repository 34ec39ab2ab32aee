package admission_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

var (
	ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	servicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// routingConfig routes each Ingress host to its Service; the timeout
// annotation is written naively (without the safe helpers) on purpose, so
// that the policy phase is what stands between an annotation and haproxy.
const routingConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name], labelSelector: {matchLabels: {routed: "yes"}}}
  haproxyConfig:
    template: |
      global
        maxconn 100
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend http
        bind 127.0.0.1:18080
      {{- range $ing := .resources.ingresses.List }}
      {{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}
      {{- $name := (index $ing.spec.rules 0).http.paths | first }}
      {{- $svcName := $name.backend.service.name }}
      {{- if not ($.resources.services.Get $ing.metadata.namespace $svcName) }}{{ fail (printf "Service '%s' not found" $svcName) }}{{ end }}
        use_backend {{ $ing.metadata.namespace }}_{{ $svcName }} if { hdr(host) -i {{ (index $ing.spec.rules 0).host }} }
      {{- end }}
      {{- range $svc := .resources.services.List }}
      backend {{ $svc.metadata.namespace }}_{{ $svc.metadata.name }}
      {{- with $svc.metadata.annotations }}{{ with index . "timeout" }}
        timeout server {{ . }}
      {{- end }}{{ end }}
        http-request return status 200
      {{- end }}
  validationTests:
    renders:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x, labels: {routed: "yes"}}}]}
      assertions: [{type: haproxy_valid}]
`

func ingress(t *testing.T, name, host, svc string) string {
	return `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: ` + name + `, namespace: default},
	  spec: {rules: [{host: ` + host + `, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ` + svc + `, port: {number: 80}}}}]}}]}}`
}

func service(name string, annotations string) string {
	return `{apiVersion: v1, kind: Service, metadata: {name: ` + name + `, namespace: default, labels: {routed: "yes"}` + annotations + `}}`
}

func newValidator(t *testing.T) (*admission.Admitter, map[string]*store.Store) {
	t.Helper()
	p := pipelineFor(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1))
	stores := p.Model.NewStores()
	require.NoError(t, stores["services"].Add(obj(t, service("echo", ""))))
	require.NoError(t, stores["ingresses"].Add(obj(t, ingress(t, "echo", "echo.example.com", "echo"))))
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(wholeState(p, stores))
	return a, stores
}

// req is an admission request of one change.
func req(gvr schema.GroupVersionResource, op store.Operation, obj, old *unstructured.Unstructured) admission.Request {
	return admission.Request{Change: watched.Change{Resource: gvr, Operation: op, Object: obj, OldObject: old}}
}

// configReq is the admission request of a proposed config given as YAML.
func configReq(t *testing.T, doc string) admission.Request {
	t.Helper()
	return req(config.GroupVersion.WithResource(config.Resource), store.Update, obj(t, doc), nil)
}

func TestResourceOperations(t *testing.T) {
	v, stores := newValidator(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		req    admission.Request
		allow  bool
		reason string
		phase  phase.Phase
	}{
		{"CREATE of a routable Ingress", req(ingressesGVR, store.Create, obj(t, ingress(t, "new", "new.example.com", "echo")), nil), true, "", ""},
		{"CREATE of an Ingress to a missing Service", req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "api")), nil), false, "Service 'api' not found", phase.Render},
		{"UPDATE that breaks the existing Ingress", req(ingressesGVR, store.Update, obj(t, ingress(t, "echo", "echo.example.com", "gone")), obj(t, ingress(t, "echo", "echo.example.com", "echo"))), false, "Service 'gone' not found", phase.Render},
		{"DELETE of a Service an Ingress needs", req(servicesGVR, store.Delete, nil, obj(t, service("echo", ""))), false, "Service 'echo' not found", phase.Render},
		{"UPDATE moving a Service out of the label selector is a delete", req(servicesGVR, store.Update,
			obj(t, `{apiVersion: v1, kind: Service, metadata: {name: echo, namespace: default}}`), obj(t, service("echo", ""))), false, "Service 'echo' not found", phase.Render},
		{"CREATE outside the label selector changes nothing", req(servicesGVR, store.Create,
			obj(t, `{apiVersion: v1, kind: Service, metadata: {name: other, namespace: default, annotations: {timeout: "bogus"}}}`), nil), true, "", ""},
		{"an invalid HAProxy value is a semantic denial", req(servicesGVR, store.Update,
			obj(t, service("echo", `, annotations: {timeout: "abc"}`)), obj(t, service("echo", ""))), false, "", phase.Semantic},
		{"a resource nobody watches is allowed", req(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, store.Create,
			obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}`), nil), true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decided(ctx, v.Decide, tc.req)
			assert.Equal(t, tc.allow, d.Allowed, d.Reason)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, d.Reason)
			}
			assert.Equal(t, tc.phase, d.Phase)
			if tc.phase == phase.Semantic {
				assert.Regexp(t, `^haproxy\.cfg:\d+: .*timeout`, d.Reason)
				assert.NotContains(t, d.Reason, "[ALERT]")
				assert.NotContains(t, d.Reason, os.TempDir())
			}
		})
	}
	// No dry run touched the actual stores.
	assert.Equal(t, 1, stores["services"].Len())
	assert.Equal(t, 1, stores["ingresses"].Len())
	got, ok := stores["ingresses"].Get("default", "echo")
	require.True(t, ok)
	assert.Equal(t, "echo.example.com", got.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["host"])
}

// With WatchNamespaces, a change in another namespace is in no store and
// is allowed unchecked; one in a watched namespace is judged.
func TestResourceOutsideWatchedNamespaces(t *testing.T) {
	ctx := context.Background()
	broken := func(ns string) *unstructured.Unstructured {
		u := obj(t, ingress(t, "api", "api.example.com", "missing"))
		u.SetNamespace(ns)
		return u
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		req        admission.Request
		allow      bool
	}{
		{"all namespaces watched", nil, req(ingressesGVR, store.Create, broken("elsewhere"), nil), false},
		{"CREATE in a watched namespace", []string{"team-a", "default"}, req(ingressesGVR, store.Create, broken("default"), nil), false},
		{"CREATE elsewhere", []string{"team-a"}, req(ingressesGVR, store.Create, broken("default"), nil), true},
		{"DELETE elsewhere", []string{"team-a"}, req(servicesGVR, store.Delete, nil, obj(t, service("echo", ""))), true},
		{"DELETE in a watched namespace", []string{"default"}, req(servicesGVR, store.Delete, nil, obj(t, service("echo", ""))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := newValidator(t)
			v.WatchNamespaces = tc.namespaces
			d := decided(ctx, v.Decide, tc.req)
			assert.Equal(t, tc.allow, d.Allowed, d.Reason)
		})
	}
}

// A lua-load smuggled into the configuration through an annotation never
// runs: the policy phase refuses it before haproxy sees the file.
func TestInjectedLuaLoadNeverRuns(t *testing.T) {
	v, _ := newValidator(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	canary := filepath.Join(dir, "canary.lua")
	require.NoError(t, os.WriteFile(canary, []byte(`os.execute("touch `+marker+`")`+"\n"), 0o600))

	for _, value := range []string{
		"5s\n  lua-load " + canary,
		"5s\nlua-load-per-thread " + canary,
		"5s\r\n\tlua-load\t" + canary,
	} {
		svc := obj(t, service("echo", ""))
		svc.SetAnnotations(map[string]string{"timeout": value})
		d := decided(context.Background(), v.Decide, req(servicesGVR, store.Update, svc, obj(t, service("echo", ""))))
		assert.False(t, d.Allowed)
		assert.Equal(t, phase.Policy, d.Phase, d.Reason)
		assert.Contains(t, d.Reason, "lua-load")
		assert.NotContains(t, d.Reason, "htc-check-", "the reason does not leak the bundle directory")
		_, err := os.Stat(marker)
		assert.True(t, os.IsNotExist(err), "the canary Lua file ran")
	}
}

func TestTestsAreCachedByConfigHash(t *testing.T) {
	v, _ := newValidator(t)
	req := req(ingressesGVR, store.Create, obj(t, ingress(t, "new", "new.example.com", "echo")), nil)
	first := decided(context.Background(), v.Decide, req)
	require.True(t, first.Allowed, first.Reason)
	assert.False(t, first.Trace.TestsCached)
	// Another change (an identical one would reuse the decision itself).
	second := decided(context.Background(), v.Decide, admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Create, Object: obj(t, ingress(t, "new2", "new2.example.com", "echo"))}})
	require.True(t, second.Allowed)
	require.False(t, second.Reused)
	assert.True(t, second.Trace.TestsCached)
}

func TestFailingEmbeddedTestDenies(t *testing.T) {
	cfg := strings.Replace(routingConfig, "assertions: [{type: haproxy_valid}]", "assertions: [{type: contains, pattern: 'maxconn 5000'}]", 1)
	cfg = strings.Replace(cfg, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1)
	p := pipelineFor(t, cfg)
	v := &admission.Admitter{Env: testEnv(t)}
	v.SetState(wholeState(p, p.Model.NewStores()))
	d := decided(context.Background(), v.Decide, req(servicesGVR, store.Create, obj(t, service("echo", "")), nil))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Tests, d.Phase)
	assert.Equal(t, "1/1 validation tests failed: renders: contains: /maxconn 5000/ not found in haproxy.cfg", d.Reason)
}

func TestConfig(t *testing.T) {
	v, _ := newValidator(t)
	good := configReq(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1))
	d := decided(context.Background(), v.Config, good)
	assert.True(t, d.Allowed, d.Reason)

	// A template change that breaks rendering over the actual stores is denied.
	broken := configReq(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n",
		"{{- if $ing }}{{ fail \"no Ingress may exist\" }}{{ end }}\n", 1))
	d = decided(context.Background(), v.Config, broken)
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Regexp(t, `^the proposed configuration fails over the current resources in the render phase at template haproxy\.cfg line \d+; the message is not shown`, d.Reason,
		"the webhook does not show a message built from resources the requester may not read")
	v.RevealLiveState = true
	d = decided(context.Background(), v.Config, broken)
	assert.Equal(t, "no Ingress may exist", d.Reason, "htc check shows it: the requester supplied the state")
}

// A config the webhook hands on as JSON (webhook.ObjectJSON: the request's
// Object holds its metadata alone) is judged as the same config decoded:
// the same decision, whether it admits, fails to render or does not
// decode. Were the JSON ignored, the metadata alone would be judged.
func TestConfigHandedOnAsJSONIsJudgedAsDecoded(t *testing.T) {
	v, _ := newValidator(t)
	ctx := context.Background()
	for name, doc := range map[string]string{
		"good": strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1),
		"fails to render": strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n",
			"{{- if $ing }}{{ fail \"no Ingress may exist\" }}{{ end }}\n", 1),
		"an unknown field": strings.Replace(routingConfig, "spec:\n", "spec:\n  bogus: 1\n", 1),
	} {
		t.Run(name, func(t *testing.T) {
			decoded := configReq(t, doc)
			js, err := json.Marshal(decoded.Object.Object)
			require.NoError(t, err)
			head := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": decoded.Object.GetAPIVersion(), "kind": decoded.Object.GetKind(), "metadata": decoded.Object.Object["metadata"]}}
			asJSON := admission.Request{Change: watched.Change{Resource: decoded.Resource, Operation: decoded.Operation, Object: head}, ObjectJSON: js}
			want := decided(ctx, v.Config, decoded)
			got := decided(ctx, v.Config, asJSON)
			assert.Equal(t, want.Allowed, got.Allowed, "%s / %s", want.Reason, got.Reason)
			assert.Equal(t, want.Phase, got.Phase)
			assert.Equal(t, want.Reason, got.Reason)
		})
	}
}

// Decide is the one entry: a proposed HAProxyTemplateConfig is judged as a
// config (its templates over the current resources), any other request as
// a change of a watched resource.
func TestDecideJudgesAConfigAsAConfigAndAnyOtherRequestAsAChange(t *testing.T) {
	v, _ := newValidator(t)
	ctx := context.Background()
	broken := configReq(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n",
		"{{- if $ing }}{{ fail \"no Ingress may exist\" }}{{ end }}\n", 1))
	d := decided(ctx, v.Decide, broken)
	assert.False(t, d.Allowed, "judged as a config")
	assert.Equal(t, phase.Render, d.Phase)
	assert.Contains(t, d.Reason, "the proposed configuration fails over the current resources")

	d = decided(ctx, v.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "api")), nil))
	assert.False(t, d.Allowed, "judged as a change")
	assert.Equal(t, "Service 'api' not found", d.Reason)
}

func TestTimeoutDenies(t *testing.T) {
	v, _ := newValidator(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	d := decided(ctx, v.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "new", "new.example.com", "echo")), nil))
	assert.False(t, d.Allowed)
	assert.Contains(t, d.Reason, "timed out")
}

// An Admitter with no configuration loaded denies every change.
func TestNoStateDenies(t *testing.T) {
	a := &admission.Admitter{}
	d := decided(context.Background(), a.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "x", "x.example.com", "x")), nil))
	assert.False(t, d.Allowed)
	assert.Equal(t, admission.ReasonNoConfig, d.Reason)
	assert.Nil(t, d.Verdict)
}
