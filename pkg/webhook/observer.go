package webhook

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Result classifies how the Handler answered one request to /validate.
type Result string

// The results an Outcome can carry; they are meant as a metrics label.
const (
	// ResultAllowed: the change was admitted (validated, or fail-open).
	ResultAllowed Result = "allowed"
	// ResultDenied: the change was denied (structural check, validator, timeout).
	ResultDenied Result = "denied"
	// ResultInvalid: the HTTP request was not an AdmissionReview the webhook
	// could answer (wrong method, content type, size, apiVersion, no uid, ...);
	// answered with an HTTP 4xx status.
	ResultInvalid Result = "invalid"
	// ResultError: handling panicked; answered with HTTP 500.
	ResultError Result = "error"
)

// phaseNotReady is the Outcome phase of a request denied because the
// handler was not ready (HandlerOptions.Ready).
const phaseNotReady = "not-ready"

// PhaseBusy is the Outcome phase of a request denied because the
// controller could not check it before its deadline (admission.ReasonBusy).
const PhaseBusy = "busy"

// Outcome describes one handled request; it is what the per-admission log
// line prints and what an Observer receives. Fields the request did not get
// far enough to know are empty.
type Outcome struct {
	// UID is the AdmissionRequest's uid.
	UID types.UID
	// GVK is the request's kind as a GVK string (as Rule.GVKString).
	GVK string
	// Namespace and Name identify the object (Name may be empty when only
	// generateName is set).
	Namespace, Name string
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string
	// DryRun is the request's dryRun flag.
	DryRun bool
	// Result is the classification of the answer.
	Result Result
	// FailOpen is true when the change was allowed without running a
	// validator (unregistered GVK, no validator configured, operation not
	// validated).
	FailOpen bool
	// Phase is the pipeline phase that denied, empty otherwise.
	Phase string
	// Reason is the denial reason or the HTTP error message.
	Reason string
	// HTTPStatus is the HTTP status code written (200 for any AdmissionReview answer).
	HTTPStatus int
	// Duration is the time spent handling the request.
	Duration time.Duration
}

// Observer receives the Handler's metric events; the controller implements
// it with Prometheus (requests by GVK and result, latency by phase,
// requests in flight). Implementations must be safe for concurrent use and
// fast: they run on the admission path.
type Observer interface {
	// InFlight is called with +1 when a request to /validate starts and
	// with -1 when it ends (also after a panic).
	InFlight(delta int)
	// Observe is called exactly once per request to /validate, when it ends.
	Observe(o Outcome)
}

// ObserverFuncs is an Observer made of optional callbacks; a nil field is
// skipped.
type ObserverFuncs struct {
	// OnInFlight implements InFlight.
	OnInFlight func(delta int)
	// OnObserve implements Observe.
	OnObserve func(o Outcome)
}

// InFlight calls OnInFlight when set.
func (f ObserverFuncs) InFlight(delta int) {
	if f.OnInFlight != nil {
		f.OnInFlight(delta)
	}
}

// Observe calls OnObserve when set.
func (f ObserverFuncs) Observe(o Outcome) {
	if f.OnObserve != nil {
		f.OnObserve(o)
	}
}
