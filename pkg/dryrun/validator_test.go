package dryrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
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

func newValidator(t *testing.T) (*dryrun.DryRunValidator, map[string]*store.Store) {
	t.Helper()
	p := pipelineFor(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1))
	stores, err := dryrun.NewStores(&p.Config.Spec)
	require.NoError(t, err)
	require.NoError(t, stores["services"].Add(obj(t, service("echo", ""))))
	require.NoError(t, stores["ingresses"].Add(obj(t, ingress(t, "echo", "echo.example.com", "echo"))))
	return dryrun.NewDryRunValidator(&dryrun.State{Pipeline: p, Stores: stores}), stores
}

func TestValidateDirectOperations(t *testing.T) {
	v, stores := newValidator(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		req    dryrun.Request
		allow  bool
		reason string
		phase  phase.Phase
	}{
		{"CREATE of a routable Ingress", dryrun.Request{Resource: ingressesGVR, Operation: store.Create, Object: obj(t, ingress(t, "new", "new.example.com", "echo"))}, true, "", ""},
		{"CREATE of an Ingress to a missing Service", dryrun.Request{Resource: ingressesGVR, Operation: store.Create, Object: obj(t, ingress(t, "api", "api.example.com", "api"))}, false, "Service 'api' not found", phase.Render},
		{"UPDATE that breaks the existing Ingress", dryrun.Request{Resource: ingressesGVR, Operation: store.Update, Object: obj(t, ingress(t, "echo", "echo.example.com", "gone")), OldObject: obj(t, ingress(t, "echo", "echo.example.com", "echo"))}, false, "Service 'gone' not found", phase.Render},
		{"DELETE of a Service an Ingress needs", dryrun.Request{Resource: servicesGVR, Operation: store.Delete, OldObject: obj(t, service("echo", ""))}, false, "Service 'echo' not found", phase.Render},
		{"UPDATE moving a Service out of the label selector is a delete", dryrun.Request{Resource: servicesGVR, Operation: store.Update,
			Object: obj(t, `{apiVersion: v1, kind: Service, metadata: {name: echo, namespace: default}}`), OldObject: obj(t, service("echo", ""))}, false, "Service 'echo' not found", phase.Render},
		{"CREATE outside the label selector changes nothing", dryrun.Request{Resource: servicesGVR, Operation: store.Create,
			Object: obj(t, `{apiVersion: v1, kind: Service, metadata: {name: other, namespace: default, annotations: {timeout: "bogus"}}}`)}, true, "", ""},
		{"an invalid HAProxy value is a semantic denial", dryrun.Request{Resource: servicesGVR, Operation: store.Update,
			Object: obj(t, service("echo", `, annotations: {timeout: "abc"}`)), OldObject: obj(t, service("echo", ""))}, false, "", phase.Semantic},
		{"a resource nobody watches is allowed", dryrun.Request{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: store.Create,
			Object: obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}`)}, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := v.ValidateDirect(ctx, tc.req)
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
		d := v.ValidateDirect(context.Background(), dryrun.Request{Resource: servicesGVR, Operation: store.Update, Object: svc, OldObject: obj(t, service("echo", ""))})
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
	req := dryrun.Request{Resource: ingressesGVR, Operation: store.Create, Object: obj(t, ingress(t, "new", "new.example.com", "echo"))}
	first := v.ValidateDirect(context.Background(), req)
	require.True(t, first.Allowed, first.Reason)
	assert.False(t, first.TestsCached)
	second := v.ValidateDirect(context.Background(), req)
	require.True(t, second.Allowed)
	assert.True(t, second.TestsCached)
}

func TestFailingEmbeddedTestDenies(t *testing.T) {
	cfg := strings.Replace(routingConfig, "assertions: [{type: haproxy_valid}]", "assertions: [{type: contains, pattern: 'maxconn 5000'}]", 1)
	cfg = strings.Replace(cfg, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1)
	p := pipelineFor(t, cfg)
	stores, err := dryrun.NewStores(&p.Config.Spec)
	require.NoError(t, err)
	v := dryrun.NewDryRunValidator(&dryrun.State{Pipeline: p, Stores: stores})
	d := v.ValidateDirect(context.Background(), dryrun.Request{Resource: servicesGVR, Operation: store.Create, Object: obj(t, service("echo", ""))})
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Tests, d.Phase)
	assert.Equal(t, "1/1 validation tests failed: renders: contains: /maxconn 5000/ not found in haproxy.cfg", d.Reason)
}

func TestValidateConfig(t *testing.T) {
	v, _ := newValidator(t)
	good := pipelineFor(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "", 1))
	d := v.ValidateConfig(context.Background(), good)
	assert.True(t, d.Allowed, d.Reason)

	// A template change that breaks rendering over the actual stores is denied.
	broken := pipelineFor(t, strings.Replace(routingConfig, "{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n",
		"{{- if $ing }}{{ fail \"no Ingress may exist\" }}{{ end }}\n", 1))
	d = v.ValidateConfig(context.Background(), broken)
	assert.False(t, d.Allowed)
	assert.Equal(t, "no Ingress may exist", d.Reason)
}

func TestDirectTimeoutDenies(t *testing.T) {
	v, _ := newValidator(t)
	v.DirectTimeout = time.Nanosecond
	d := v.ValidateDirect(context.Background(), dryrun.Request{Resource: ingressesGVR, Operation: store.Create, Object: obj(t, ingress(t, "new", "new.example.com", "echo"))})
	assert.False(t, d.Allowed)
	assert.Contains(t, d.Reason, "timed out")
}
