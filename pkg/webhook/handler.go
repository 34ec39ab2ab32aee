package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// DefaultValidationTimeout bounds one admission decision when
// HandlerOptions.Timeout is zero (5 s).
const DefaultValidationTimeout = 5 * time.Second

// DefaultConfigValidationTimeout bounds the decision of a change of the
// HAProxyTemplateConfig when HandlerOptions.ConfigTimeout is zero (25 s):
// its admission renders every watched object with the proposed templates,
// which at 10,000 objects takes longer than a route's (whose render reuses
// the live state's records). It stays below the config webhook's
// timeoutSeconds (DefaultConfigTimeoutSeconds, 30), the API server's
// deadline, leaving the answer time to travel.
const DefaultConfigValidationTimeout = 25 * time.Second

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// Registry maps GVK strings to validators. When nil or never Set, no
	// validator is configured and every request is allowed with a warning.
	Registry *Registry
	// Timeout bounds one admission decision; zero means
	// DefaultValidationTimeout. A request whose URL carries a shorter
	// timeout (the API server sends the webhook's timeoutSeconds as
	// ?timeout=10s) gets that one.
	Timeout time.Duration
	// ConfigTimeout is Timeout for a change of the HAProxyTemplateConfig
	// (the kind of ConfigRule); zero means DefaultConfigValidationTimeout.
	// A request whose URL carries a shorter timeout gets that one.
	ConfigTimeout time.Duration
	// Logger receives one line per admission and the warnings; nil discards.
	Logger *slog.Logger
	// Observer receives metric events; nil means none.
	Observer Observer
	// Ready, when set, is asked before each well-formed request is decided:
	// while it returns false, the request is denied with the reason it
	// returns (e.g. the controller's stores are not synced yet) and no
	// validator runs. Nil means always ready.
	Ready func() (ready bool, reason string)
}

// Handler is the http.Handler of /validate: it decodes an AdmissionReview v1,
// runs the structural check, calls the validator registered for the
// request's kind under a deadline and answers with an AdmissionReview
// carrying the request's uid. It is safe for concurrent use.
//
// The Handler is the one owner of the admission deadline: validate sets
// it once, counted from the request's arrival (the URL's ?timeout=, capped
// by HandlerOptions.Timeout, or ConfigTimeout for the config's kind: see
// timeoutOf), and answers at it; everything below (the Admitter, the
// checks, the busy estimate) honours that context instead of setting its
// own.
type Handler struct {
	registry      *Registry
	timeout       time.Duration
	configTimeout time.Duration
	configGVK     string
	log           *slog.Logger
	obs           Observer
	ready         func() (bool, string)
}

// NewHandler returns a Handler configured by opts.
func NewHandler(opts HandlerOptions) *Handler {
	h := &Handler{registry: opts.Registry, timeout: opts.Timeout, configTimeout: opts.ConfigTimeout,
		configGVK: ConfigRule().GVKString, log: opts.Logger, obs: opts.Observer, ready: opts.Ready}
	if h.timeout <= 0 {
		h.timeout = DefaultValidationTimeout
	}
	if h.configTimeout <= 0 {
		h.configTimeout = DefaultConfigValidationTimeout
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.obs == nil {
		h.obs = ObserverFuncs{}
	}
	return h
}

// ServeHTTP answers one admission request. A panic while handling is
// recovered, logged and answered with HTTP 500.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	out := &Outcome{Result: ResultInvalid}
	h.obs.InFlight(1)
	defer func() {
		if p := recover(); p != nil {
			h.recovered(w, p, out)
		}
		out.Duration = time.Since(start)
		h.obs.InFlight(-1)
		h.obs.Observe(*out)
		h.logOutcome(r.Context(), out)
	}()

	review, herr := decodeReview(w, r)
	if herr != nil {
		out.HTTPStatus, out.Reason = herr.status, herr.msg
		http.Error(w, herr.msg, herr.status)
		return
	}
	budget := h.timeoutOf(r, gvkString(schema.GroupVersionKind(review.Request.Kind)))
	resp := h.admit(r.Context(), start, budget, review.Request, out)
	body, err := json.Marshal(Review(resp))
	if err != nil {
		panic(fmt.Errorf("encoding AdmissionReview: %w", err))
	}
	out.HTTPStatus = http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// admit decides req within budget from start (see validate) and records
// what it learns in out.
func (h *Handler) admit(ctx context.Context, start time.Time, budget time.Duration, req *admissionv1.AdmissionRequest, out *Outcome) *admissionv1.AdmissionResponse {
	out.UID, out.Namespace, out.Name = req.UID, req.Namespace, req.Name
	out.Operation, out.DryRun = string(req.Operation), req.DryRun != nil && *req.DryRun
	out.GVK = gvkString(schema.GroupVersionKind(req.Kind))

	if h.ready != nil {
		if ok, reason := h.ready(); !ok {
			out.Result, out.Reason, out.Phase = ResultDenied, reason, phaseNotReady
			return deniedResponse(req.UID, reason)
		}
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete:
	default:
		out.Result, out.FailOpen = ResultAllowed, true
		return allowedResponse(req.UID)
	}
	v, registered := h.registry.Lookup(out.GVK)
	_, ownJSON := v.(objectJSON)
	obj, old, objJSON, reason := parseObjects(req, ownJSON)
	if reason != "" {
		out.Result, out.Reason = ResultDenied, reason
		return deniedResponse(req.UID, reason)
	}
	switch { // the API server leaves request.name empty for generateName
	case out.Name != "":
	case obj != nil:
		out.Name = obj.GetName()
	case old != nil:
		out.Name = old.GetName()
	}

	if v == nil {
		out.Result, out.FailOpen = ResultAllowed, true
		switch {
		case !h.registry.configured():
			h.log.WarnContext(ctx, "no dry-run validator configured, allowing the request (fail-open)", "gvk", out.GVK, "uid", req.UID)
		case registered:
			h.log.WarnContext(ctx, "no validator for a registered kind, allowing the request (fail-open)", "gvk", out.GVK, "uid", req.UID)
		}
		return allowedResponse(req.UID)
	}

	d, report := h.validate(ctx, start, budget, v, admission.Request{Change: watched.Change{
		Resource:  schema.GroupVersionResource(req.Resource),
		Operation: store.Operation(req.Operation),
		Object:    obj,
		OldObject: old,
	}, ObjectJSON: objJSON})
	if !d.Allowed && d.Reason == "" {
		d.Reason = "the change was denied without a reason"
	}
	out.Result, out.Phase = ResultAllowed, string(d.Phase)
	if report.Busy {
		out.Phase = PhaseBusy
	}
	if !d.Allowed {
		out.Result, out.Reason = ResultDenied, d.Reason
	}
	return FromDecision(req.UID, d)
}

// timeoutOf is how long the Handler gives the decision of r, a request of
// kind gvk: the timeout the API server put in r's URL (?timeout=10s, the
// webhook's timeoutSeconds), capped by HandlerOptions.Timeout (ConfigTimeout
// for the config's kind), which is also the default when the URL carries
// none (or one that does not parse as a positive duration).
func (h *Handler) timeoutOf(r *http.Request, gvk string) time.Duration {
	limit := h.timeout
	if gvk == h.configGVK {
		limit = h.configTimeout
	}
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || d <= 0 || d > limit {
		return limit
	}
	return d
}

// validate calls v under the admission's deadline, budget from the
// request's start, and returns its decision and report. It answers when
// the deadline passes even if v has not returned yet (v's goroutine
// finishes on its own); a panic in v is carried back to ServeHTTP's
// recover.
func (h *Handler) validate(ctx context.Context, start time.Time, budget time.Duration, v Validator, req admission.Request) (admission.Decision, admission.Report) {
	ctx, cancel := context.WithDeadline(ctx, start.Add(budget))
	defer cancel()
	type result struct {
		d admission.Decision
		r admission.Report
		p *panicValue
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{p: &panicValue{value: p, stack: debug.Stack()}}
			}
		}()
		d, r := v.Admit(ctx, req)
		done <- result{d: d, r: r}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		select {
		case res = <-done:
		default:
			return admission.Deny("", fmt.Sprintf("validation timed out after %s", budget)), admission.Report{}
		}
	}
	if res.p != nil {
		panic(res.p)
	}
	return res.d, res.r
}

// panicValue is a panic recovered on another goroutine, with its stack.
type panicValue struct {
	value any
	stack []byte
}

func (h *Handler) recovered(w http.ResponseWriter, p any, out *Outcome) {
	stack := debug.Stack()
	if pv, ok := p.(*panicValue); ok {
		p, stack = pv.value, pv.stack
	}
	h.log.Error("panic while handling an admission request", "panic", fmt.Sprint(p), "uid", out.UID, "gvk", out.GVK)
	h.log.Debug("panic stack", "stack", string(stack))
	out.Result, out.HTTPStatus, out.Reason = ResultError, http.StatusInternalServerError, "internal error"
	http.Error(w, "internal error", http.StatusInternalServerError)
}

func (h *Handler) logOutcome(ctx context.Context, o *Outcome) {
	if o.Result == ResultInvalid {
		h.log.WarnContext(ctx, "rejected a request that is not a valid AdmissionReview", "status", o.HTTPStatus, "error", o.Reason)
		return
	}
	attrs := []any{
		"gvk", o.GVK, "namespace", o.Namespace, "name", o.Name, "operation", o.Operation,
		"uid", o.UID, "dryRun", o.DryRun, "allowed", o.Result == ResultAllowed,
		"phase", o.Phase, "duration", o.Duration,
	}
	if o.Result == ResultDenied {
		attrs = append(attrs, "reason", o.Reason)
	}
	if o.FailOpen {
		attrs = append(attrs, "failOpen", true)
	}
	h.log.InfoContext(ctx, "admission", attrs...)
}
