// Package admission decides admission requests: a proposed change of a
// watched resource, or a proposed HAProxyTemplateConfig, is turned into the
// state of the stores it would produce (or the pipeline it would build),
// checked on the one check path (dryrun.Pipeline.Check), and answered with a
// Decision. The webhook and `htc check` both call it, so the offline CLI
// decides exactly as the webhook does.
//
// The path reads top to bottom, one file per step:
//
//	webhook.Handler (package webhook): the deadline, from ?timeout=
//	Admitter.Resource(ctx, Request)                      admitter.go
//	  → not watched (namespace)? allowed
//	  → repeats: an identical request against the same
//	    live state shares or reuses its decision          repeat.go
//	  → watched.Model.StoreChanges (what each store would
//	    see); none: allowed
//	  → dryrun.Pipeline.RendersAlike? (no field the
//	    templates read changes: allowed, the baseline's
//	    failures as warnings)
//	  → watched.Apply (the actual stores + the change)
//	  → a check slot, or ReasonBusy when ctx's deadline
//	    leaves no time for one                            slots.go
//	  → judge against the Baseline: diagnose with its
//	    broken objects hidden, confirm with nothing
//	    hidden, attribute (dryrun.Pipeline.Diagnose)      judge.go, baseline.go
//	  → redacted (Secret data, the process's values)     secrecy.go
//	  → Decision{Allowed, Reason, Phase, Warnings, ...}  decision.go
//
//	Admitter.Config(ctx, Request)                        admitter.go
//	  → not this controller's config? allowed, a warning
//	  → config.FromUnstructured → dryrun.Build (validation, templates)
//	  → a check slot (or ReasonBusy)
//	  → judge over the actual stores the proposed config would watch,
//	    against the baseline moved to its stores
//	  → the live state's details hidden (unless RevealLiveState), redacted
//
// The Admitter sets no deadline: ctx's is the webhook handler's (the API
// server's ?timeout=, capped by the configured admission timeout, 5 s by
// default) or the one htc check sets. Every step honours it, and a request
// that could not get a check slot early enough to finish before it is
// denied at once with ReasonBusy (the estimate of one check against ctx's
// deadline).
//
// The caches on the way (repeated decisions, the baseline, the redactor,
// and those of packages render, dryrun and haproxy) are listed in one
// table, with their keys, invalidation, bounds and metrics, in
// docs/caches.md.
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
}

// Decision is the answer to one Request.
type Decision struct {
	// Allowed is true when the change may be admitted.
	Allowed bool
	// Reason is the short, user-readable denial reason (empty when allowed).
	Reason string
	// Phase is the phase that denied (empty when allowed).
	Phase phase.Phase
	// Warnings are shown to the user with an allowed change.
	Warnings []string
	// Verdict is the check behind the decision; nil when none ran (the
	// change touches no watched store, or was denied before rendering).
	Verdict *dryrun.Verdict
	// Introduced are the failures the change introduces (it is denied for
	// them, or admitted with a warning in Warn mode).
	Introduced []dryrun.Failure
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

// fromVerdict admits a change whose configuration passed every check and
// denies one whose configuration failed, with the verdict's reason.
func fromVerdict(v *dryrun.Verdict) Decision {
	d := Allow(v.Warnings...)
	if !v.Passed() {
		d = Deny(v.Phase, v.Reason)
	}
	d.Verdict = v
	return d
}
