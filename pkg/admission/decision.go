package admission

import (
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Request is one proposed change, as the webhook decoded it from an
// AdmissionReview (or `htc check` from files).
type Request struct {
	watched.Change
	// ObjectJSON is the object as the API server sent it, when the
	// webhook hands it on instead of decoding it (webhook.ObjectJSON: an
	// HAProxyTemplateConfig's). Object then holds only its apiVersion,
	// kind and metadata.
	ObjectJSON []byte
}

// Decision is the answer to one Request: what the response is built from
// (package webhook's FromDecision, htc check's output), and nothing else.
// What the decision learned on the way (the verdict, the failures that
// were there before, how it was reached) is its Report, returned beside
// it.
type Decision struct {
	// Allowed is true when the change may be admitted.
	Allowed bool
	// Reason is the short, user-readable denial reason (empty when allowed).
	Reason string
	// Phase is the phase that denied (empty when allowed, or when the
	// denial is no phase's: busy, cancelled).
	Phase phase.Phase
	// Warnings are shown to the user with an allowed change.
	Warnings []string
	// Introduced are the failures the change introduces (it is denied for
	// them, or admitted with a warning in Warn mode): the response's
	// status causes.
	Introduced []dryrun.Failure
}

// Allow admits a change, with warnings.
func Allow(warnings ...string) Decision {
	return Decision{Allowed: true, Warnings: warnings}
}

// Deny rejects a change for reason, found in phase ph.
func Deny(ph phase.Phase, reason string) Decision {
	if reason == "" {
		reason = "the change was denied without a reason"
	}
	return Decision{Phase: ph, Reason: reason}
}

// Report is what one decision learned besides its answer, for those who
// observe the path (the webhook's Outcome, the controller's metrics,
// Events and shadow checks, tests): Decide returns it beside the
// Decision, and no response is built from it.
type Report struct {
	// Verdict is the check behind the decision; nil when none ran (the
	// change touches no watched store, or was denied before rendering).
	Verdict *dryrun.Verdict
	// Trace is how the check behind Verdict got there (its durations,
	// cache hits, the stores it rendered over); zero when none ran.
	Trace dryrun.Trace
	// Existing are failures of the current resources the change leaves as
	// they were (each is a warning).
	Existing []dryrun.Failure
	// Warned reports a change admitted despite introduced failures
	// (validationAction: Warn).
	Warned bool
	// RendersAlike reports a change admitted without a check because it
	// leaves every field the templates read as it was (see
	// dryrun.Pipeline.RendersAlike).
	RendersAlike bool
	// Reused reports a decision made for an identical request against the
	// same live state moments before (or at the same time), answered
	// without a check of its own.
	Reused bool
	// Incomplete reports a change denied because failures kept appearing
	// in objects it does not touch until the rounds ran out.
	Incomplete bool
	// Busy reports a change denied because it could not be checked in
	// time (ReasonBusy).
	Busy bool
	// Proposed is a proposed config's pipeline, when it was judged over
	// the live stores alone (its render's FragmentStats say whether it
	// applied carried records: package shadow samples those).
	Proposed *dryrun.Pipeline
	// Hidden reports a proposed config's decision that says where it
	// fails over the current resources but not what (see
	// Admitter.RevealLiveState).
	Hidden bool
}
