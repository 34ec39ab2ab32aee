package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/phase"
	renderpkg "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// BenchmarkIngressLibrariesConfigUpdate admits config UPDATEs over 1,000
// Ingresses of make bench-scale's mix (HTC_CREATE_INGRESSES=n for
// another count), with the plain Ingress library and the ingress-nginx
// library: what bench-scale's "config UPDATE reading what the stores
// keep" asks the webhook: the same UPDATE, sent again and again (as
// bench-scale sends it: it is not applied), appending a line to
// haproxy.cfg's template that reads every Ingress's name and writes
// nothing, so the rendered bundle is the live one. One unmeasured UPDATE
// goes first, as in bench-scale (its embedded tests' report is then
// cached by the config's hash). The Admitter has the controller's caches
// of embedded test reports, template sets and assertion patterns. It
// reports p50-ms, p99-ms, cpu-ms/op (the process's CPU per UPDATE) and
// the mean of each phase:
// of the Admitter's Config alone (admitter), and through the webhook's
// handler from the AdmissionReview's JSON, the config's validator marked
// as the controller marks it (webhook) and unmarked
// (webhook-decoding-both: the handler decodes both objects in full).
//
//	go test -run '^$' -bench 'IngressLibrariesConfigUpdate' -benchtime 40x ./examples/
func BenchmarkIngressLibrariesConfigUpdate(b *testing.B) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Skip("no haproxy in PATH")
	}
	n := envInt(b, "HTC_CREATE_INGRESSES", 1000)
	for _, lib := range benchLibraries {
		live := newMixLive(b, bin, lib, n, dryrun.Env{Tests: testrun.NewCache(16), Templates: renderpkg.NewTemplates(4), Patterns: validation.NewPatterns(2048)})
		a, cfg := live.a, live.cfg
		ctx := context.Background()
		old := configObject(b, cfg)
		obj := old.DeepCopy()
		tpl, _, _ := unstructured.NestedString(obj.Object, "spec", "haproxyConfig", "template")
		tpl += "{{- range $r := .resources.ingresses.List }}{{ if eq $r.metadata.name \"bench-scale-never\" }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
		require.NoError(b, unstructured.SetNestedField(obj.Object, tpl, "spec", "haproxyConfig", "template"))
		req := admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update, Object: obj, OldObject: old}}
		name := fmt.Sprintf("%s/mix/ingresses=%d", lib.name, n)
		b.Run(name+"/admitter", func(b *testing.B) {
			benchConfigUpdates(b, func() (admission.Decision, admission.Report) { return a.Config(ctx, req) })
		})
		// Through the webhook's handler, from the AdmissionReview's JSON,
		// with the config's validator marked as the controller marks it
		// (webhook.ObjectJSON), and unmarked as any other kind's.
		body := configReview(b, obj, old)
		for _, marked := range []bool{true, false} {
			var report admission.Report
			var v webhook.Validator = webhook.ValidatorFunc(func(ctx context.Context, req admission.Request) (admission.Decision, admission.Report) {
				d, r := a.Decide(ctx, req)
				report = r
				return d, r
			})
			variant := "/webhook"
			if marked {
				v = webhook.ObjectJSON(v)
			} else {
				variant += "-decoding-both"
			}
			h := webhook.NewHandler(webhook.HandlerOptions{Registry: webhook.NewRegistry(map[string]webhook.Validator{webhook.ConfigRule().GVKString: v})})
			b.Run(name+variant, func(b *testing.B) {
				benchConfigUpdates(b, func() (admission.Decision, admission.Report) {
					rec := httptest.NewRecorder()
					r := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					h.ServeHTTP(rec, r)
					var out admissionv1.AdmissionReview
					require.NoError(b, json.Unmarshal(rec.Body.Bytes(), &out))
					return admission.Decision{Allowed: out.Response.Allowed, Reason: out.Response.Result.String()}, report
				})
			})
		}
	}
}

// benchConfigUpdates runs decide, one config UPDATE's admission, once
// unmeasured and then b.N times, and reports p50-ms, p99-ms, cpu-ms/op
// and the mean of each phase.
func benchConfigUpdates(b *testing.B, decide func() (admission.Decision, admission.Report)) {
	d, _ := decide()
	require.True(b, d.Allowed, d.Reason)
	phases := map[phase.Phase]time.Duration{}
	walls := make([]time.Duration, 0, b.N)
	cpu := processCPU()
	for b.Loop() {
		start := time.Now()
		d, r := decide()
		walls = append(walls, time.Since(start))
		require.True(b, d.Allowed, d.Reason)
		for ph, t := range r.Trace.Durations {
			phases[ph] += t
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	reportWalls(b, walls)
	reportPhases(b, phases)
}

// configReview is the AdmissionReview the API server sends for the
// config UPDATE from old to obj.
func configReview(tb testing.TB, obj, old *unstructured.Unstructured) []byte {
	tb.Helper()
	raw := func(u *unstructured.Unstructured) runtime.RawExtension {
		js, err := json.Marshal(u.Object)
		require.NoError(tb, err)
		return runtime.RawExtension{Raw: js}
	}
	gvk := config.GroupVersion.WithKind(config.Kind)
	gvr := config.GroupVersion.WithResource(config.Resource)
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "bench",
			Kind:      metav1.GroupVersionKind(gvk),
			Resource:  metav1.GroupVersionResource(gvr),
			Name:      obj.GetName(),
			Namespace: obj.GetNamespace(),
			Operation: admissionv1.Update,
			Object:    raw(obj),
			OldObject: raw(old),
		},
	})
	require.NoError(tb, err)
	return body
}

// configObject is cfg as the API server sends it: an unstructured
// HAProxyTemplateConfig.
func configObject(tb testing.TB, cfg *config.HAProxyTemplateConfig) *unstructured.Unstructured {
	tb.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	require.NoError(tb, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(config.GroupVersion.String())
	u.SetKind(config.Kind)
	if u.GetName() == "" {
		u.SetName("htc")
		u.SetNamespace("htc-system")
	}
	return u
}
