// Package admission decides admission requests: a proposed change of a
// watched resource, or a proposed HAProxyTemplateConfig, is turned into the
// state of the stores it would produce (or the pipeline it would build),
// checked on the one check path (dryrun.Pipeline.Check), and answered with a
// Decision. The webhook and `htc check` both call it, so the offline CLI
// decides exactly as the webhook does.
//
// The path reads top to bottom, one file per step (each step calls the
// next; "→" a step of the function above it):
//
//	webhook.Handler.ServeHTTP (package webhook, handler.go): the one
//	  deadline, from ?timeout=; admit: decode, structural check;
//	  validate: the Validator under that deadline, with a Report
//	  (WithReport) the controller's metrics wrapper reads too
//	Admitter.Resource(ctx, Request)                      admitter.go
//	  → no config: denied; not watched (namespace): allowed
//	  → repeats.decide: an identical request against the
//	    same live state shares or reuses its decision     repeat.go
//	  → decideResource:                                  admitter.go
//	    → watched.Model.StoreChanges (what each store
//	      would see); none: allowed
//	    → dryrun.Pipeline.RendersAlike? (no field the
//	      templates read changes: allowed, the baseline's
//	      failures as warnings)
//	    → watched.Apply (the actual stores + the change)
//	    → slots.acquire: a check slot, or ReasonBusy when
//	      ctx's deadline leaves no time for one           slots.go
//	    → judge against the Baseline: diagnose with its
//	      broken objects hidden, confirm with nothing
//	      hidden, attribute (dryrun.Pipeline.Diagnose,
//	      one CheckWith a round: see package dryrun)     judge.go, baseline.go
//	  → redacted (Secret data, the process's values)     secrecy.go
//	  → answer: the Decision{Allowed, Reason, Phase,
//	    Warnings, Introduced} the response is built
//	    from; the rest (verdict, existing failures, how
//	    the decision was reached) to ctx's Report         decision.go
//
//	Admitter.Config(ctx, Request)                        admitter.go
//	  → not this controller's config? allowed, a warning
//	  → config.FromUnstructured → dryrun.Build (validation, templates)
//	  → storesFor: the objects it renders once applied:   proposed.go
//	    a live store that watches a resource the same
//	    way and keeps every field it reads (State.Kept
//	    covers dryrun.Pipeline.Keep), else the Source's
//	    store (the controller: the informer the config
//	    will have; htc check: the state files), one
//	    proposal listing at a time; not listed in time:
//	    denied, saying so
//	  → slots.acquire (or ReasonBusy)
//	  → judge over those stores, against the baseline moved to them
//	  → the live state's details hidden (unless RevealLiveState), redacted
//	    (the listed Secrets too)
//	  → answer, as above
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
	"context"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Request is one proposed change, as the webhook decoded it from an
// AdmissionReview (or `htc check` from files).
type Request struct {
	watched.Change
}

// Decision is the answer to one Request: what the response is built from
// (package webhook's FromDecision, htc check's output), and nothing else.
// What the decision learned on the way (the verdict, the failures that
// were there before, how it was reached) is its Report.
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
// observe the path (the webhook's outcome, the controller's metrics,
// Events and shadow checks, tests): a caller that wants it asks with
// WithReport.
type Report struct {
	// Verdict is the check behind the decision; nil when none ran (the
	// change touches no watched store, or was denied before rendering).
	Verdict *dryrun.Verdict
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

// reportKey is the context key of a decision's *Report.
type reportKey struct{}

// WithReport returns ctx carrying a Report, and that Report: Resource and
// Config fill it, before they return, with what their decision under ctx
// learned. When ctx carries one already it returns ctx and that one, so
// every wrapper on the way (the webhook's handler, the controller's
// metrics) reads the same report. One report holds one decision: give
// each Resource or Config call a ctx of its own.
func WithReport(ctx context.Context) (context.Context, *Report) {
	if r, ok := ctx.Value(reportKey{}).(*Report); ok {
		return ctx, r
	}
	r := &Report{}
	return context.WithValue(ctx, reportKey{}, r), r
}

// outcome is a decision and its report, as the steps of the path pass
// them on; only the entry points split them (answer).
type outcome struct {
	Decision
	Report
}

// allow and deny are Allow and Deny with an empty report.
func allow(warnings ...string) outcome           { return outcome{Decision: Allow(warnings...)} }
func deny(ph phase.Phase, reason string) outcome { return outcome{Decision: Deny(ph, reason)} }

// answer is the Decision of o, after o's report is given to the report
// ctx carries (see WithReport).
func (o outcome) answer(ctx context.Context) Decision {
	if r, ok := ctx.Value(reportKey{}).(*Report); ok {
		*r = o.Report
	}
	return o.Decision
}
