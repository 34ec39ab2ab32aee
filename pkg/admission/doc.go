// Package admission decides admission requests: a proposed change of a
// watched resource, or a proposed HAProxyTemplateConfig, is turned into the
// state of the stores it would produce (or the pipeline it would build),
// checked on the one check path (package dryrun), and answered. The webhook
// and `htc check` both call Admitter.Decide, so the offline CLI decides
// exactly as the webhook does.
//
// # What a check finds: four words
//
//   - dryrun.Verdict: one check of one state of the stores (render,
//     policy, syntax, schema, haproxy -c, the embedded tests): passed, or
//     the phase and reason it failed (with its Trace: how it got there).
//   - dryrun.Diagnosis: every failure of one state, found by rounds of
//     checks that hide what failed, each attributed to its objects
//     (dryrun.Failure).
//   - Decision: the answer to one Request (allowed or denied, the reason,
//     the warnings, the failures the change introduces): all a response
//     is built from.
//   - Report: what the decision learned on the way (its verdict, the
//     failures that were there before, whether it was reused, rendered
//     alike, warned, incomplete or busy), returned beside the Decision for
//     those who observe the path (the webhook's Outcome, the controller's
//     metrics, Events and shadow checks, tests).
//
// # The path of one admission
//
// From the TLS server to the verdict and back, one hop a line
// (package.function, then its file); each calls the next, "←" is what
// comes back:
//
//	 1 webhook.Handler.ServeHTTP        webhook/handler.go   decode the AdmissionReview; the one deadline
//	 2 webhook.Handler.admit            webhook/handler.go   not ready, other operations, the structural
//	                                                         check, Registry.Lookup
//	 3 webhook.Handler.validate         webhook/handler.go   the Validator under the deadline, answered at it
//	 4 controller.observed              controller/validators.go  (the controller's Validator) metrics,
//	                                                         Events and shadow samples, from the Report
//	 5 admission.Admitter.Decide        admitter.go          a config → Config; anything else → Resource
//	 6 admission.Admitter.Resource      admitter.go          no config: denied; not watched: allowed
//	 7 admission.repeats.decide         repeat.go            an identical request against the same state:
//	                                                         its decision, kept or shared (flight.Group.Do)
//	 8 admission.Admitter.decideResource admitter.go         watched.Model.StoreChanges (none: allowed),
//	                                                         dryrun.Pipeline.RendersAlike (allowed),
//	                                                         watched.Apply, a check slot (slots.go) or busy
//	 9 admission.Admitter.judge         judge.go             against the Baseline (baseline.go)
//	10 dryrun.Pipeline.Diagnose         dryrun/diagnose.go   rounds of checks, hiding what failed
//	11 dryrun.Pipeline.CheckWith        dryrun/check.go      one check, then the embedded tests
//	                                                         (testrun.Cache, shared)
//	12 dryrun.Pipeline.renderAndCheck   dryrun/check.go      render.Engine.Render, then the check phases
//	                                                         (dryrun.checkCache, shared; haproxy.Checker)
//	                                                         ← dryrun.Verdict, dryrun.Diagnosis
//	13 admission.confirm                judge.go             once more with nothing hidden, if anything was
//	14 admission.Admitter.decide        judge.go             ← Decision, Report
//	15 admission.Admitter.redacted      secrecy.go           Secret data and the process's values removed
//	16 webhook.FromDecision             webhook/response.go  ← the AdmissionResponse
//
// Admitter.Config (a proposed HAProxyTemplateConfig) takes 6 to 8 in its
// own way: not this controller's config: allowed, a warning;
// config.FromUnstructured and dryrun.Build (validation, templates);
// storesFor (proposed.go: the live stores that keep what it reads, else
// what the Source lists, one proposal listing at a time; not listed in
// time: denied, saying so); a check slot; judge over those stores against
// the baseline moved to them; and, unless RevealLiveState, what the live
// state says hidden (hideLiveStateDetails, secrecy.go).
//
// # Deadlines
//
// One owner: the caller's ctx carries the decision's deadline (the webhook
// Handler's, from the API server's ?timeout= capped by the configured
// admission timeout, 5 s by default and 25 s for a config; the one htc
// check sets). The Admitter sets none; below it the deadline is asked one
// question, whether it leaves time (timeFor: for a check slot's wait, else
// busy at once with ReasonBusy; for the confirming diagnosis), and the
// checks honour it.
//
// One rule for shared runs, alike for the repeated decisions here, the
// check cache and the embedded tests' cache (package dryrun), implemented
// once by flight.Group.Do:
//
//   - A run shared by several callers is nobody's: it carries the values
//     of the caller that started it, but neither its cancellation nor its
//     deadline.
//   - It carries a bound of its own, fixed when it starts: a decision, the
//     deadline of the request that started it; a check, the checker's
//     (haproxy.Options.Timeout); the embedded tests, the test timeout.
//   - It ends at that bound, or when the last caller waiting for it has
//     left.
//   - Each caller waits under its own deadline: when that comes first (or
//     the caller is cancelled), it is answered at once (a decision:
//     ReasonTimedOut, or cancelled), and the run goes on for the others. A caller whose deadline is the run's bound or
//     later waits for the run's own answer, which the bound brings: the
//     request that started a decision gets its "timed out during ..."
//     rather than a bare deadline.
//
// The caches on the way (repeated decisions, the baseline, the redactor,
// and those of packages render, dryrun and haproxy) are listed in one
// table, with their keys, invalidation, bounds and metrics, in
// docs/caches.md.
package admission
