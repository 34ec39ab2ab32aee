package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
)

// testCert is a self-signed certificate (its own CA) and its key.
type testCert struct {
	certPEM, keyPEM []byte
	leaf            *x509.Certificate
}

// pool returns a pool trusting c.
func (c testCert) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.leaf)
	return p
}

// tlsCert returns c as a tls.Certificate (for client authentication).
func (c testCert) tlsCert(t *testing.T) tls.Certificate {
	t.Helper()
	tc, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
	require.NoError(t, err)
	return tc
}

// newCert returns a self-signed ECDSA certificate for 127.0.0.1 valid for
// server and client authentication.
func newCert(t *testing.T, cn string) testCert {
	t.Helper()
	c := testutil.SelfSigned(t, cn, time.Now().Add(24*time.Hour).Truncate(time.Second))
	return testCert{certPEM: c.CertPEM, keyPEM: c.KeyPEM, leaf: c.Leaf}
}

// safeBuffer is a goroutine-safe log sink.
type safeBuffer = testutil.SyncBuffer

// testLogger returns a debug-level text logger writing to a buffer.
func testLogger() (*slog.Logger, *safeBuffer) {
	buf := &safeBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// fakeValidator records its requests and answers with decide (Allowed when
// nil) and report.
type fakeValidator struct {
	mu     sync.Mutex
	reqs   []admission.Request
	decide func(ctx context.Context, req admission.Request) admission.Decision
	report admission.Report
}

func (f *fakeValidator) Admit(ctx context.Context, req admission.Request) (admission.Decision, admission.Report) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.decide != nil {
		return f.decide(ctx, req), f.report
	}
	return admission.Decision{Allowed: true}, f.report
}

func (f *fakeValidator) requests() []admission.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]admission.Request(nil), f.reqs...)
}

// Kinds and resources used in the tests.
var (
	ingressGVK = metav1.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	ingressGVR = metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	serviceGVK = metav1.GroupVersionKind{Version: "v1", Kind: "Service"}
	serviceGVR = metav1.GroupVersionResource{Version: "v1", Resource: "services"}
)

const ingressKey = "networking.k8s.io/v1.Ingress"

// ingress returns an Ingress object as JSON; an empty name leaves
// metadata.name out.
func ingress(name, host string) []byte {
	meta := map[string]any{"namespace": "default", "labels": map[string]any{"app": "echo"}}
	if name != "" {
		meta["name"] = name
	}
	obj := map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "Ingress",
		"metadata":   meta,
		"spec": map[string]any{"rules": []any{map[string]any{
			"host": host,
			"http": map[string]any{"paths": []any{map[string]any{
				"path": "/", "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": "echo", "port": map[string]any{"number": 8080}}},
			}}},
		}}},
	}
	b, _ := json.Marshal(obj)
	return b
}

// reviewOpt changes the AdmissionRequest a test sends.
type reviewOpt func(*admissionv1.AdmissionRequest)

func withOld(raw []byte) reviewOpt {
	return func(r *admissionv1.AdmissionRequest) { r.OldObject = runtime.RawExtension{Raw: raw} }
}

func withObject(raw []byte) reviewOpt {
	return func(r *admissionv1.AdmissionRequest) { r.Object = runtime.RawExtension{Raw: raw} }
}

func withDryRun() reviewOpt {
	return func(r *admissionv1.AdmissionRequest) { t := true; r.DryRun = &t }
}

func withKind(gvk metav1.GroupVersionKind, gvr metav1.GroupVersionResource) reviewOpt {
	return func(r *admissionv1.AdmissionRequest) { r.Kind, r.Resource = gvk, gvr }
}

// review returns an AdmissionReview v1 for an Ingress named name as JSON.
func review(uid string, op admissionv1.Operation, name string, opts ...reviewOpt) []byte {
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID(uid),
		Kind:      ingressGVK,
		Resource:  ingressGVR,
		Name:      name,
		Namespace: "default",
		Operation: op,
	}
	if op != admissionv1.Delete {
		req.Object = runtime.RawExtension{Raw: ingress(name, "echo.example.com")}
	}
	for _, o := range opts {
		o(req)
	}
	b, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	return b
}

// decodeResponse parses an AdmissionReview response body.
func decodeResponse(t *testing.T, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var rev admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &rev), string(body))
	require.Equal(t, "admission.k8s.io/v1", rev.APIVersion)
	require.Equal(t, "AdmissionReview", rev.Kind)
	require.NotNil(t, rev.Response)
	return rev.Response
}
