package webhook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// post sends body to h as a POST /validate with a JSON content type.
func post(h http.Handler, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// newTestHandler returns a handler with v registered for Ingress.
func newTestHandler(v Validator, opts ...func(*HandlerOptions)) (*Handler, *safeBuffer) {
	log, buf := testLogger()
	o := HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: v}), Logger: log}
	for _, f := range opts {
		f(&o)
	}
	return NewHandler(o), buf
}

func TestHandlerRejectsRequestsThatAreNotAdmissionReviews(t *testing.T) {
	valid := review("u1", admissionv1.Create, "echo")
	tests := []struct {
		name        string
		method      string
		contentType string
		body        io.Reader
		chunked     bool
		declared    int64
		status      int
		message     string
	}{
		{name: "GET", method: http.MethodGet, contentType: "application/json", body: bytes.NewReader(valid), status: http.StatusMethodNotAllowed, message: "method GET not allowed"},
		{name: "PUT", method: http.MethodPut, contentType: "application/json", body: bytes.NewReader(valid), status: http.StatusMethodNotAllowed, message: "method PUT not allowed"},
		{name: "text content type", method: http.MethodPost, contentType: "text/plain", body: bytes.NewReader(valid), status: http.StatusUnsupportedMediaType, message: "want application/json"},
		{name: "no content type", method: http.MethodPost, body: bytes.NewReader(valid), status: http.StatusUnsupportedMediaType, message: "want application/json"},
		{name: "yaml content type", method: http.MethodPost, contentType: "application/yaml", body: bytes.NewReader(valid), status: http.StatusUnsupportedMediaType, message: "want application/json"},
		{name: "oversized body with length", method: http.MethodPost, contentType: "application/json", body: bytes.NewReader(make([]byte, maxRequestBytes+1)), status: http.StatusRequestEntityTooLarge, message: "exceeds"},
		{name: "oversized body declaring a small length", method: http.MethodPost, contentType: "application/json", body: bytes.NewReader(make([]byte, maxRequestBytes+1)), declared: 100, status: http.StatusRequestEntityTooLarge, message: "exceeds"},
		{name: "oversized body chunked", method: http.MethodPost, contentType: "application/json", body: bytes.NewReader(make([]byte, maxRequestBytes+1)), chunked: true, status: http.StatusRequestEntityTooLarge, message: "exceeds"},
		{name: "not JSON", method: http.MethodPost, contentType: "application/json", body: strings.NewReader("{not json"), status: http.StatusBadRequest, message: "not an AdmissionReview"},
		{name: "v1beta1", method: http.MethodPost, contentType: "application/json", body: strings.NewReader(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1"}}`), status: http.StatusBadRequest, message: `unsupported AdmissionReview apiVersion "admission.k8s.io/v1beta1"`},
		{name: "wrong kind", method: http.MethodPost, contentType: "application/json", body: strings.NewReader(`{"apiVersion":"admission.k8s.io/v1","kind":"Ingress","request":{"uid":"u1"}}`), status: http.StatusBadRequest, message: `kind "Ingress"`},
		{name: "missing request", method: http.MethodPost, contentType: "application/json", body: strings.NewReader(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), status: http.StatusBadRequest, message: "AdmissionReview has no request"},
		{name: "empty uid", method: http.MethodPost, contentType: "application/json", body: strings.NewReader(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"","operation":"CREATE"}}`), status: http.StatusBadRequest, message: "AdmissionReview request has no uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &fakeValidator{}
			var outcomes []Outcome
			h, _ := newTestHandler(v, func(o *HandlerOptions) {
				o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
			})
			req := httptest.NewRequest(tt.method, "/validate", tt.body)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.chunked {
				req.ContentLength = -1
			}
			if tt.declared > 0 {
				req.ContentLength = tt.declared
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			assert.Equal(t, tt.status, rec.Code)
			assert.Contains(t, rec.Body.String(), tt.message)
			if tt.status == http.StatusMethodNotAllowed {
				assert.Equal(t, http.MethodPost, rec.Header().Get("Allow"))
			}
			assert.Empty(t, v.requests(), "the validator must not run")
			require.Len(t, outcomes, 1)
			assert.Equal(t, ResultInvalid, outcomes[0].Result)
			assert.Equal(t, tt.status, outcomes[0].HTTPStatus)
		})
	}
}

func TestHandlerCreatePassesObjectOperationAndUID(t *testing.T) {
	v := &fakeValidator{}
	h, _ := newTestHandler(v)
	req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(review("uid-create", admissionv1.Create, "echo")))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	resp := decodeResponse(t, rec.Body.Bytes())
	assert.Equal(t, types.UID("uid-create"), resp.UID)
	assert.True(t, resp.Allowed)

	reqs := v.requests()
	require.Len(t, reqs, 1)
	got := reqs[0]
	assert.Equal(t, store.Create, got.Operation)
	assert.Equal(t, "CREATE", string(got.Operation))
	assert.Equal(t, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, got.Resource)
	require.NotNil(t, got.Object)
	assert.Equal(t, "echo", got.Object.GetName())
	assert.Equal(t, "default", got.Object.GetNamespace())
	assert.Equal(t, "Ingress", got.Object.GetKind())
	assert.Equal(t, map[string]string{"app": "echo"}, got.Object.GetLabels())
	rules := got.Object.Object["spec"].(map[string]any)["rules"].([]any)
	port := rules[0].(map[string]any)["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)["backend"].(map[string]any)["service"].(map[string]any)["port"].(map[string]any)["number"]
	assert.Equal(t, int64(8080), port, "integers decode as int64, like informer objects")
	assert.Nil(t, got.OldObject)
}

func TestHandlerUpdatePassesObjectAndOldObject(t *testing.T) {
	v := &fakeValidator{}
	h, _ := newTestHandler(v)
	rec := post(h, review("uid-update", admissionv1.Update, "echo", withOld(ingress("echo", "old.example.com"))))

	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, types.UID("uid-update"), decodeResponse(t, rec.Body.Bytes()).UID)
	reqs := v.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, store.Update, reqs[0].Operation)
	require.NotNil(t, reqs[0].Object)
	require.NotNil(t, reqs[0].OldObject)
	host := func(o map[string]any) any {
		return o["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["host"]
	}
	assert.Equal(t, "echo.example.com", host(reqs[0].Object.Object))
	assert.Equal(t, "old.example.com", host(reqs[0].OldObject.Object))
}

func TestHandlerDeletePassesOldObject(t *testing.T) {
	v := &fakeValidator{}
	h, _ := newTestHandler(v)
	rec := post(h, review("uid-delete", admissionv1.Delete, "echo", withOld(ingress("echo", "old.example.com"))))

	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.True(t, decodeResponse(t, rec.Body.Bytes()).Allowed)
	reqs := v.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, store.Delete, reqs[0].Operation)
	assert.Nil(t, reqs[0].Object)
	require.NotNil(t, reqs[0].OldObject)
	assert.Equal(t, "echo", reqs[0].OldObject.GetName())
}

// TestHandlerHandsTheJSONOfAnObjectJSONValidator: for a validator
// ObjectJSON marked, an UPDATE's oldObject is not decoded (one that does
// not decode is not refused) and the request carries none; a DELETE's,
// the only object, is. Its request carries the object as sent and, as
// its Object, only the object's apiVersion, kind and metadata; an object
// that does not parse, or names nothing, is refused as for any other.
func TestHandlerHandsTheJSONOfAnObjectJSONValidator(t *testing.T) {
	obj := ingress("echo", "echo.example.com")
	tests := []struct {
		name   string
		op     admissionv1.Operation
		obj    []byte
		old    []byte
		marked bool
		reason string // a denial's, before any validator runs
		hasOld bool
	}{
		{name: "an UPDATE, marked", op: admissionv1.Update, obj: obj, old: ingress("echo", "old.example.com"), marked: true},
		{name: "an UPDATE whose oldObject does not decode, marked", op: admissionv1.Update, obj: obj, old: []byte(`{"kind": 1}`), marked: true},
		{name: "an UPDATE whose oldObject does not decode, not marked", op: admissionv1.Update, obj: obj, old: []byte(`{"kind": 1}`), reason: "oldObject is not a valid Kubernetes resource"},
		{name: "a DELETE, marked", op: admissionv1.Delete, old: ingress("echo", "old.example.com"), marked: true, hasOld: true},
		{name: "an UPDATE, not marked", op: admissionv1.Update, obj: obj, old: ingress("echo", "old.example.com"), hasOld: true},
		{name: "a CREATE, marked", op: admissionv1.Create, obj: obj, marked: true},
		{name: "a CREATE, not marked", op: admissionv1.Create, obj: obj},
		{name: "a CREATE whose object is not a JSON object, marked", op: admissionv1.Create, obj: []byte(`["a"]`), marked: true, reason: "object is not a valid Kubernetes resource"},
		{name: "a CREATE whose object has no kind, marked", op: admissionv1.Create, obj: []byte(`{"apiVersion":"v1","metadata":{"name":"a"}}`), marked: true, reason: "object is not a valid Kubernetes resource: kind is missing"},
		{name: "a CREATE whose object names nothing, marked", op: admissionv1.Create, obj: ingress("", "echo.example.com"), marked: true, reason: reasonNameRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &fakeValidator{}
			var registered Validator = v
			if tt.marked {
				registered = ObjectJSON(v)
			}
			h, _ := newTestHandler(registered)
			opts := []reviewOpt{withOld(tt.old)}
			if tt.obj != nil {
				opts = append(opts, withObject(tt.obj))
			}
			rec := post(h, review("uid", tt.op, "echo", opts...))
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			resp := decodeResponse(t, rec.Body.Bytes())
			require.Equal(t, tt.reason == "", resp.Allowed, resp.Result)
			if tt.reason != "" {
				assert.Contains(t, resp.Result.Message, tt.reason)
				assert.Empty(t, v.requests(), "no validator runs")
				return
			}
			reqs := v.requests()
			require.Len(t, reqs, 1)
			req := reqs[0]
			assert.Equal(t, tt.hasOld, req.OldObject != nil, "the request carries the old object")
			if tt.obj == nil {
				assert.Nil(t, req.ObjectJSON)
				return
			}
			require.NotNil(t, req.Object)
			assert.Equal(t, "echo", req.Object.GetName())
			assert.Equal(t, "Ingress", req.Object.GetKind())
			assert.Equal(t, map[string]string{"app": "echo"}, req.Object.GetLabels())
			_, hasSpec := req.Object.Object["spec"]
			if tt.marked {
				assert.JSONEq(t, string(tt.obj), string(req.ObjectJSON), "the object as sent")
				assert.False(t, hasSpec, "only the head is decoded")
			} else {
				assert.Nil(t, req.ObjectJSON)
				assert.True(t, hasSpec, "the whole object is decoded")
			}
		})
	}
}

func TestHandlerStructuralCheck(t *testing.T) {
	nameless := ingress("", "echo.example.com")
	generateName := bytes.Replace(nameless, []byte(`"metadata":{`), []byte(`"metadata":{"generateName":"echo-",`), 1)
	tests := []struct {
		name    string
		body    []byte
		allowed bool
		reason  string
	}{
		{name: "CREATE without name or generateName", body: review("u", admissionv1.Create, "", withObject(nameless)), reason: reasonNameRequired},
		{name: "UPDATE without name or generateName", body: review("u", admissionv1.Update, "", withObject(nameless), withOld(ingress("echo", "x"))), reason: reasonNameRequired},
		{name: "DELETE checks oldObject", body: review("u", admissionv1.Delete, "", withOld(nameless)), reason: reasonNameRequired},
		{name: "DELETE without oldObject", body: review("u", admissionv1.Delete, "echo"), reason: "oldObject is not a valid Kubernetes resource: it is missing"},
		{name: "CREATE without object", body: review("u", admissionv1.Create, "echo", withObject(nil)), reason: "object is not a valid Kubernetes resource: it is missing"},
		{name: "object not a JSON object", body: review("u", admissionv1.Create, "echo", withObject([]byte(`["a"]`))), reason: "object is not a valid Kubernetes resource: "},
		{name: "object without kind", body: review("u", admissionv1.Create, "echo", withObject([]byte(`{"apiVersion":"v1","metadata":{"name":"a"}}`))), reason: "object is not a valid Kubernetes resource: kind is missing"},
		{name: "object without apiVersion", body: review("u", admissionv1.Create, "echo", withObject([]byte(`{"kind":"Ingress","metadata":{"name":"a"}}`))), reason: "object is not a valid Kubernetes resource: apiVersion is missing"},
		{name: "oldObject not valid", body: review("u", admissionv1.Update, "echo", withOld([]byte(`{"metadata":{"name":"a"}}`))), reason: "oldObject is not a valid Kubernetes resource: apiVersion is missing"},
		{name: "DELETE with the name only in oldObject", body: review("u", admissionv1.Delete, "", withOld(ingress("echo", "x"))), allowed: true},
		{name: "generateName only is enough", body: review("u", admissionv1.Create, "", withObject(generateName)), allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &fakeValidator{}
			h, _ := newTestHandler(v)
			rec := post(h, tt.body)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			resp := decodeResponse(t, rec.Body.Bytes())
			assert.Equal(t, types.UID("u"), resp.UID)
			if tt.allowed {
				assert.True(t, resp.Allowed)
				assert.Len(t, v.requests(), 1)
				return
			}
			assert.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
			if tt.reason == reasonNameRequired {
				assert.Equal(t, "metadata.name or metadata.generateName is required", resp.Result.Message)
			} else {
				assert.Contains(t, resp.Result.Message, tt.reason)
			}
			assert.Empty(t, v.requests(), "a structural failure must not reach the validator")
		})
	}
}

func TestHandlerDenialCarriesReasonAndPhase(t *testing.T) {
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		return admission.Decision{Allowed: false, Reason: "Service 'api' not found", Phase: phase.Render}
	}}
	var outcomes []Outcome
	h, logs := newTestHandler(v, func(o *HandlerOptions) {
		o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
	})
	rec := post(h, review("uid-deny", admissionv1.Create, "echo"))

	require.Equal(t, http.StatusOK, rec.Code)
	resp := decodeResponse(t, rec.Body.Bytes())
	assert.Equal(t, types.UID("uid-deny"), resp.UID)
	assert.False(t, resp.Allowed)
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
	assert.Equal(t, "Service 'api' not found", resp.Result.Message)
	require.Len(t, outcomes, 1)
	assert.Equal(t, ResultDenied, outcomes[0].Result)
	assert.Equal(t, "render", outcomes[0].Phase)
	assert.Contains(t, logs.String(), "allowed=false phase=render")
}

// A validator's report reaches the outcome: a decision the Admitter
// reports busy (admission.Report.Busy, returned beside the decision) is
// observed and logged with phase busy.
func TestHandlerObservesTheBusyReport(t *testing.T) {
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		return admission.Deny("", admission.ReasonBusy)
	}, report: admission.Report{Busy: true}}
	var outcomes []Outcome
	h, logs := newTestHandler(v, func(o *HandlerOptions) {
		o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
	})
	rec := post(h, review("uid-busy", admissionv1.Create, "echo"))

	require.Equal(t, http.StatusOK, rec.Code)
	resp := decodeResponse(t, rec.Body.Bytes())
	assert.False(t, resp.Allowed)
	assert.Equal(t, admission.ReasonBusy, resp.Result.Message)
	require.Len(t, outcomes, 1)
	assert.Equal(t, PhaseBusy, outcomes[0].Phase)
	assert.Contains(t, logs.String(), "allowed=false phase=busy")
}

func TestHandlerDenialWithoutReasonGetsOne(t *testing.T) {
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision { return admission.Decision{} }}
	h, _ := newTestHandler(v)
	resp := decodeResponse(t, post(h, review("u", admissionv1.Create, "echo")).Body.Bytes())
	assert.False(t, resp.Allowed)
	assert.Equal(t, "the change was denied without a reason", resp.Result.Message)
}

func TestHandlerWarningsPassThrough(t *testing.T) {
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		return admission.Decision{Allowed: true, Warnings: []string{"haproxy.cfg:12: a 'http-request' rule placed after a 'use_backend' rule will still be processed before."}}
	}}
	h, _ := newTestHandler(v)
	resp := decodeResponse(t, post(h, review("u", admissionv1.Create, "echo")).Body.Bytes())
	assert.True(t, resp.Allowed)
	assert.Equal(t, []string{"haproxy.cfg:12: a 'http-request' rule placed after a 'use_backend' rule will still be processed before."}, resp.Warnings)
}

func TestHandlerDryRunRequestsAreValidatedTheSame(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
			return admission.Decision{Reason: "Service 'api' not found", Phase: phase.Render}
		}}
		h, logs := newTestHandler(v)
		var opts []reviewOpt
		if dryRun {
			opts = append(opts, withDryRun())
		}
		resp := decodeResponse(t, post(h, review("u", admissionv1.Create, "echo", opts...)).Body.Bytes())
		assert.False(t, resp.Allowed, "dryRun=%v", dryRun)
		assert.Equal(t, "Service 'api' not found", resp.Result.Message, "dryRun=%v", dryRun)
		assert.Len(t, v.requests(), 1, "dryRun=%v", dryRun)
		if dryRun {
			assert.Contains(t, logs.String(), "dryRun=true")
		}
	}
}

func TestHandlerCancelsValidationAtTheDeadline(t *testing.T) {
	seen := make(chan error, 1)
	v := &fakeValidator{decide: func(ctx context.Context, _ admission.Request) admission.Decision {
		<-ctx.Done()
		seen <- ctx.Err()
		return admission.Decision{Reason: "validation timed out during rendering and checking the configuration"}
	}}
	h, _ := newTestHandler(v, func(o *HandlerOptions) { o.Timeout = 20 * time.Millisecond })
	resp := decodeResponse(t, post(h, review("uid-slow", admissionv1.Create, "echo")).Body.Bytes())

	assert.Equal(t, context.DeadlineExceeded, <-seen)
	assert.Equal(t, types.UID("uid-slow"), resp.UID)
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "timed out")
}

func TestHandlerAnswersAtTheDeadlineEvenIfTheValidatorIgnoresIt(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		<-release // ignores ctx
		return admission.Decision{Allowed: true}
	}}
	h, _ := newTestHandler(v, func(o *HandlerOptions) { o.Timeout = 20 * time.Millisecond })
	resp := decodeResponse(t, post(h, review("uid-stuck", admissionv1.Create, "echo")).Body.Bytes())

	assert.Equal(t, types.UID("uid-stuck"), resp.UID)
	assert.False(t, resp.Allowed)
	assert.Equal(t, "validation timed out after 20ms", resp.Result.Message)
}

func TestHandlerDefaultTimeoutIsFiveSeconds(t *testing.T) {
	var deadline time.Time
	var ok bool
	v := &fakeValidator{decide: func(ctx context.Context, _ admission.Request) admission.Decision {
		deadline, ok = ctx.Deadline()
		return admission.Decision{Allowed: true}
	}}
	h, _ := newTestHandler(v)
	before := time.Now()
	post(h, review("u", admissionv1.Create, "echo"))

	assert.Equal(t, 5*time.Second, h.timeout)
	assert.Equal(t, 25*time.Second, h.configTimeout, "a config's")
	require.True(t, ok, "the validator must run under a deadline")
	assert.WithinRange(t, deadline, before.Add(4*time.Second), time.Now().Add(5*time.Second))
}

func TestHandlerRecoversFromPanics(t *testing.T) {
	var calls int
	var mu sync.Mutex
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			panic("boom")
		}
		return admission.Decision{Allowed: true}
	}}
	var outcomes []Outcome
	h, logs := newTestHandler(v, func(o *HandlerOptions) {
		o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
	})

	rec := post(h, review("uid-panic", admissionv1.Create, "echo"))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), "panic=boom")
	assert.Contains(t, logs.String(), "level=DEBUG msg=\"panic stack\"")
	assert.Contains(t, logs.String(), "handler_test.go", "the stack is the validator's")

	rec = post(h, review("uid-after", admissionv1.Create, "echo"))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, types.UID("uid-after"), decodeResponse(t, rec.Body.Bytes()).UID)

	require.Len(t, outcomes, 2)
	assert.Equal(t, ResultError, outcomes[0].Result)
	assert.Equal(t, http.StatusInternalServerError, outcomes[0].HTTPStatus)
	assert.Equal(t, ResultAllowed, outcomes[1].Result)
}

func TestHandlerObserverAndLogLine(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	var outcomes []Outcome
	obs := ObserverFuncs{
		OnInFlight: func(d int) {
			mu.Lock()
			defer mu.Unlock()
			inFlight += d
			maxInFlight = max(maxInFlight, inFlight)
		},
		OnObserve: func(o Outcome) {
			mu.Lock()
			defer mu.Unlock()
			outcomes = append(outcomes, o)
		},
	}
	v := &fakeValidator{decide: func(_ context.Context, req admission.Request) admission.Decision {
		if req.Object.GetName() == "bad" {
			return admission.Decision{Reason: "haproxy.cfg:10: unknown keyword 'bogus'", Phase: phase.Semantic}
		}
		return admission.Decision{Allowed: true}
	}}
	h, logs := newTestHandler(v, func(o *HandlerOptions) { o.Observer = obs })

	post(h, review("u1", admissionv1.Create, "good"))
	post(h, review("u2", admissionv1.Update, "bad", withOld(ingress("bad", "x"))))

	assert.Equal(t, 0, inFlight)
	assert.Equal(t, 1, maxInFlight)
	require.Len(t, outcomes, 2)
	assert.Equal(t, Outcome{UID: "u1", GVK: ingressKey, Namespace: "default", Name: "good", Operation: "CREATE", Result: ResultAllowed, HTTPStatus: 200, Duration: outcomes[0].Duration}, outcomes[0])
	assert.Equal(t, Outcome{UID: "u2", GVK: ingressKey, Namespace: "default", Name: "bad", Operation: "UPDATE", Result: ResultDenied, Phase: "semantic", Reason: "haproxy.cfg:10: unknown keyword 'bogus'", HTTPStatus: 200, Duration: outcomes[1].Duration}, outcomes[1])
	assert.Positive(t, outcomes[0].Duration)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2, "one line per admission")
	for _, want := range []string{"msg=admission", "gvk=" + ingressKey, "namespace=default", "name=good", "operation=CREATE", "allowed=true", "phase=\"\"", "duration="} {
		assert.Contains(t, lines[0], want)
	}
	for _, want := range []string{"name=bad", "operation=UPDATE", "allowed=false", "phase=semantic", "reason=\"haproxy.cfg:10: unknown keyword 'bogus'\""} {
		assert.Contains(t, lines[1], want)
	}
}

func TestHandlerNameFromObjectWhenRequestHasNone(t *testing.T) {
	var outcomes []Outcome
	h, _ := newTestHandler(&fakeValidator{}, func(o *HandlerOptions) {
		o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
	})
	body := review("u", admissionv1.Create, "", withObject(ingress("from-object", "x")))
	post(h, body)
	require.Len(t, outcomes, 1)
	assert.Equal(t, "from-object", outcomes[0].Name)
}

// Until Ready says so, every well-formed request (even one whose object is
// malformed) is denied with Ready's reason and no validator runs; requests
// that are not AdmissionReviews get their HTTP errors as always.
func TestHandlerDeniesUntilReady(t *testing.T) {
	var ready atomic.Bool
	v := &fakeValidator{}
	var observed []Outcome
	h, _ := newTestHandler(v, func(o *HandlerOptions) {
		o.Ready = func() (bool, string) { return ready.Load(), "htc is starting" }
		o.Observer = ObserverFuncs{OnObserve: func(out Outcome) { observed = append(observed, out) }}
	})

	resp := decodeResponse(t, post(h, review("u-1", admissionv1.Create, "echo", withObject([]byte(`{}`)))).Body.Bytes())
	assert.Equal(t, types.UID("u-1"), resp.UID)
	assert.False(t, resp.Allowed)
	assert.Equal(t, "htc is starting", resp.Result.Message)
	require.Len(t, observed, 1)
	assert.Equal(t, ResultDenied, observed[0].Result)
	assert.Equal(t, phaseNotReady, observed[0].Phase)
	assert.Equal(t, ingressKey, observed[0].GVK)
	assert.Empty(t, v.requests())

	assert.Equal(t, http.StatusBadRequest, post(h, []byte(`{"request":{}}`)).Code)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/validate", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)

	ready.Store(true)
	resp = decodeResponse(t, post(h, review("u-2", admissionv1.Create, "echo")).Body.Bytes())
	assert.True(t, resp.Allowed, "once ready, requests reach the validator")
	assert.Len(t, v.requests(), 1)
}
