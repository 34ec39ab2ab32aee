package controller

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/haproxy-template/htc/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

var (
	servicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	configGVR    = config.GroupVersion.WithResource(config.Resource)
	cmGVR        = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func TestOptionsValidate(t *testing.T) {
	ok := Options{ConfigNamespace: "ns", ConfigName: "n", CertFile: "c", KeyFile: "k"}
	require.NoError(t, ok.Validate())
	secret := Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "ns/s"}
	require.NoError(t, secret.Validate())
	never := Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "ns/s", IdleMemoryReturn: -1}
	require.NoError(t, never.Validate(), "a negative idle memory return never returns")

	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"no namespace":          {Options{ConfigName: "n", CertSecret: "a/b"}, "config namespace is required"},
		"no name":               {Options{ConfigNamespace: "ns", CertSecret: "a/b"}, "config name is required"},
		"no certificate":        {Options{ConfigNamespace: "ns", ConfigName: "n"}, "serving certificate is required"},
		"cert without key":      {Options{ConfigNamespace: "ns", ConfigName: "n", CertFile: "c"}, "must be set together"},
		"both sources":          {Options{ConfigNamespace: "ns", ConfigName: "n", CertFile: "c", KeyFile: "k", CertSecret: "a/b"}, "not both"},
		"bad secret":            {Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "nope"}, "not namespace/name"},
		"pprof without metrics": {Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "a/b", Pprof: true}, "pprof is served on the metrics listener"},
		"idle memory return too short": {Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "a/b", IdleMemoryReturn: 500 * time.Millisecond},
			"the idle memory return period 500ms is shorter than 1s"},
		"idle shortcut checks without idle periods": {Options{ConfigNamespace: "ns", ConfigName: "n", CertSecret: "a/b", IdleMemoryReturn: -1, ShortcutCheckWhenIdle: true},
			"checking the shortcuts when idle needs the idle memory return"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The webhook's readiness gate opens when the stores of a good config
// synced (the handler side is TestHandlerDeniesUntilReady).
func TestReadyGate(t *testing.T) {
	c := newController(Options{}, slog.New(slog.DiscardHandler), fakeClient(), restMapper(), nil)
	ok, reason := c.ready()
	assert.False(t, ok)
	assert.Equal(t, StartingReason, reason)
	c.synced.Store(true)
	ok, _ = c.ready()
	assert.True(t, ok)
}

func svc(ns, name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"namespace": ns, "name": name, "resourceVersion": rv},
		"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}},
	}}
	return u
}

func ingressObj(name, service string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec": map[string]any{"rules": []any{map[string]any{
			"host": name + ".example.com",
			"http": map[string]any{"paths": []any{map[string]any{
				"path": "/", "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": service, "port": map[string]any{"number": int64(80)}}},
			}}},
		}}},
	}}
}

// smallConfig is a config over ingresses and services whose Ingress must
// name an existing Service; with maintenance it also watches ConfigMaps.
func smallConfig(t *testing.T, maintenance bool) *unstructured.Unstructured {
	t.Helper()
	tpl := `global
  maxconn 100
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f
  bind :8080
  default_backend none
backend none
{{- range $i := .resources.ingresses.List }}{{ range $r := $i.spec.rules }}{{ range $p := $r.http.paths }}
{{- if not ($.resources.services.Get $i.metadata.namespace $p.backend.service.name) }}{{ fail (printf "Service '%s' not found" $p.backend.service.name) }}{{ end }}
{{- end }}{{ end }}{{ end }}
`
	watched := map[string]any{
		"ingresses": map[string]any{"apiVersion": "networking.k8s.io/v1", "resources": "ingresses", "indexBy": []any{"metadata.namespace", "metadata.name"}, "webhookValidation": true},
		"services":  map[string]any{"apiVersion": "v1", "resources": "services", "indexBy": []any{"metadata.namespace", "metadata.name"}},
	}
	if maintenance {
		watched["configmaps"] = map[string]any{"apiVersion": "v1", "resources": "configmaps", "indexBy": []any{"metadata.namespace", "metadata.name"}, "webhookValidation": true}
		tpl = `{{ if .resources.configmaps.Get "default" "maintenance" }}{{ fail "maintenance" }}{{ end }}` + tpl
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc"},
		"spec": map[string]any{
			"watchedResources": watched,
			"haproxyConfig":    map[string]any{"template": tpl},
			"validationTests": map[string]any{
				"valid": map[string]any{"assertions": []any{map[string]any{"type": "haproxy_valid"}}},
			},
		},
	}}
}

func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	return m
}

func needHAProxy(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		if _, err := exec.LookPath("/usr/sbin/haproxy"); err != nil {
			t.Skip("haproxy not installed (make haproxy)")
		}
		t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin")
	}
}

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		servicesGVR:                          "ServiceList",
		ingressesGVR:                         "IngressList",
		cmGVR:                                "ConfigMapList",
		configGVR:                            config.Kind + "List",
		{Version: "v1", Resource: "secrets"}: "SecretList",
	}, objs...)
}

// TestConfigLoopWiring runs the config loop and the live loop over a fake
// dynamic client: config → informers → stores → admission state →
// registry, then a config change that adds a watched resource and a
// template, applied live, and a failure of the live state that becomes the
// baseline admissions are judged against.
func TestConfigLoopWiring(t *testing.T) {
	needHAProxy(t)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	dyn := fakeClient(svc("default", "echo", "1"), smallConfig(t, false))
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"}, log, dyn, restMapper(), testChecker(t))
	events := record.NewFakeRecorder(1000)
	c.status.Recorder = events

	ctx := runLoops(t, c)

	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")
	assert.Contains(t, logs.String(), "live configuration checked",
		"the live configuration is checked on load, warming the parse cache before any admission")
	assert.Equal(t, []string{"haproxy-template.io/v1alpha1.HAProxyTemplateConfig", "networking.k8s.io/v1.Ingress"}, c.registry.GVKs(),
		"services have no webhookValidation, so only Ingress and the config are registered")

	ing, _ := c.registry.Lookup("networking.k8s.io/v1.Ingress")
	require.NotNil(t, ing)
	d, _ := ing.Admit(ctx, ingressReq(ingressObj("a", "missing")))
	assert.False(t, d.Allowed)
	assert.Equal(t, "Service 'missing' not found", d.Reason)
	d, report := ing.Admit(ctx, ingressReq(ingressObj("a", "echo")))
	assert.True(t, d.Allowed, "%+v", d)
	assert.True(t, report.Trace.TestsCached, "the tests were warmed when the config was applied")

	// A Service created later reaches the store through the informer.
	_, err := dyn.Resource(servicesGVR).Namespace("default").Create(ctx, svc("default", "late", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return decisionOf(ing.Admit(ctx, ingressReq(ingressObj("b", "late")))).Allowed
	}, 10*time.Second, 20*time.Millisecond)

	// The config validator denies a config whose tests fail and one that does not validate.
	cv, _ := c.registry.Lookup("haproxy-template.io/v1alpha1.HAProxyTemplateConfig")
	require.NotNil(t, cv)
	broken := smallConfig(t, false)
	require.NoError(t, unstructured.SetNestedField(broken.Object, "global\n  bogus-keyword\n", "spec", "haproxyConfig", "template"))
	d, _ = cv.Admit(ctx, configReq(broken))
	assert.False(t, d.Allowed)
	assert.NotEmpty(t, d.Reason)
	invalid := smallConfig(t, false)
	unstructured.RemoveNestedField(invalid.Object, "spec", "watchedResources")
	d, _ = cv.Admit(ctx, configReq(invalid))
	assert.False(t, d.Allowed)
	assert.Contains(t, d.Reason, "watchedResources")

	// Reconfigure: watch ConfigMaps, fail while default/maintenance exists.
	maintenance := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "default", "name": "maintenance"},
	}}
	next := smallConfig(t, true)
	next.SetResourceVersion("2")
	_, err = dyn.Resource(configGVR).Namespace("htc-system").Update(ctx, next, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok := c.registry.Lookup("v1.ConfigMap")
		return ok
	}, 20*time.Second, 20*time.Millisecond, "the new watched resource was not registered")
	cm, _ := c.registry.Lookup("v1.ConfigMap")
	d, _ = cm.Admit(ctx, admission.Request{Change: watched.Change{Resource: cmGVR, Operation: store.Create, Object: maintenance}})
	assert.False(t, d.Allowed)
	assert.Equal(t, "maintenance", d.Reason, "the new template and the new store are live")

	// Made outside admission, the ConfigMap breaks the live configuration:
	// the baseline knows, and an unrelated Ingress is admitted with a
	// warning instead of being denied for it.
	_, err = dyn.Resource(cmGVR).Namespace("default").Create(ctx, maintenance, metav1.CreateOptions{})
	require.NoError(t, err)
	ing, _ = c.registry.Lookup("networking.k8s.io/v1.Ingress")
	require.Eventually(t, func() bool {
		return promtestutil.ToFloat64(c.metrics.LiveFailures) == 1
	}, 20*time.Second, 20*time.Millisecond, "the live loop never reported the failure")
	d, _ = ing.Admit(ctx, ingressReq(ingressObj("c", "echo")))
	assert.True(t, d.Allowed, d.Reason)
	assert.Equal(t, []string{"failing before this change (not denied): maintenance"}, d.Warnings)
	got, err := dyn.Resource(configGVR).Namespace("htc-system").Get(ctx, "htc", metav1.GetOptions{})
	require.NoError(t, err)
	failures, _, _ := unstructured.NestedSlice(got.Object, "status", "failures")
	assert.Equal(t, []any{map[string]any{"phase": "render", "reason": "maintenance"}}, failures, "the status lists what is broken")
	count, _, _ := unstructured.NestedInt64(got.Object, "status", "failureCount")
	assert.Equal(t, int64(1), count)

	// An invalid config is logged; the last good one keeps serving.
	bad := smallConfig(t, true)
	unstructured.RemoveNestedField(bad.Object, "spec", "haproxyConfig")
	bad.SetResourceVersion("3")
	_, err = dyn.Resource(configGVR).Namespace("htc-system").Update(ctx, bad, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "keeping the last good configuration") }, 10*time.Second, 20*time.Millisecond)
	_, ok := c.registry.Lookup("v1.ConfigMap")
	assert.True(t, ok)
	// The Event is recorded after that log line: wait for it.
	var warning string
	for !strings.HasPrefix(warning, "Warning ConfigNotApplied") {
		select {
		case warning = <-events.Events:
		case <-time.After(10 * time.Second):
			t.Fatalf("no ConfigNotApplied Event; the last one: %q", warning)
		}
	}
	assert.Regexp(t, `^Warning ConfigNotApplied the HAProxyTemplateConfig is invalid: .*haproxyConfig.*; the last good configuration \(resourceVersion 2\) keeps serving$`, warning,
		"an Event on the config says why it was not applied")
}

func TestReadyz(t *testing.T) {
	c := newController(Options{}, slog.New(slog.DiscardHandler), fakeClient(), restMapper(), nil)
	rec := httptest.NewRecorder()
	c.readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "certificate")
}

// TestShutdownDelayKeepsServingNotReady: once Run's context ends, the
// controller goes on running (its context stays open) for ShutdownDelay
// with /readyz answering 503, so that endpoints drop the pod before its
// servers close; without a delay it stops at once.
func TestShutdownDelayKeepsServingNotReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		stopping bool // the run context is still open after the parent ended
	}{
		{"delay", time.Hour, true},
		{"no delay", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(Options{ShutdownDelay: tc.delay}, slog.New(slog.DiscardHandler), fakeClient(), restMapper(), nil)
			parent, cancelParent := context.WithCancel(t.Context())
			ctx, cancel := c.drain(parent)
			defer cancel()
			cancelParent()
			require.Eventually(t, c.draining.Load, 10*time.Second, time.Millisecond, "draining once the parent context ended")
			rec := httptest.NewRecorder()
			c.readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
			assert.Contains(t, rec.Body.String(), "shutting down")
			if tc.stopping {
				assert.NoError(t, ctx.Err(), "still running during the shutdown delay")
				cancel()
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the run context did not end")
			}
		})
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer = testutil.SyncBuffer

// testChecker is a checker with the real haproxy.
func testChecker(t *testing.T) *haproxy.Checker {
	t.Helper()
	needHAProxy(t)
	c, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	return c
}

// runLoops runs c's config loop, live loop and status writer until the test ends, and
// returns their context.
func runLoops(t *testing.T, c *controller) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	done, liveDone, statusDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { defer close(done); c.configLoop(ctx) }()
	go func() { defer close(statusDone); c.objStatus.Run(ctx) }()
	go func() {
		defer close(liveDone)
		c.live.run(ctx, newDebouncer(nil, 10*time.Millisecond, 100*time.Millisecond))
	}()
	t.Cleanup(func() { cancel(); <-done; <-liveDone; <-statusDone })
	return ctx
}

func ingressReq(obj *unstructured.Unstructured) admission.Request {
	return admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Create, Object: obj}}
}

func configReq(obj *unstructured.Unstructured) admission.Request {
	return admission.Request{Change: watched.Change{Resource: configGVR, Operation: store.Update, Object: obj}}
}

// decisionOf is the decision of a validator's answer, without its report.
func decisionOf(d admission.Decision, _ admission.Report) admission.Decision { return d }
