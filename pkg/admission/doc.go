// Package admission decides admission requests: a proposed change of a
// watched resource, or a proposed HAProxyTemplateConfig, is turned into the
// state of the stores it would produce (or the pipeline it would build),
// checked on the one check path (package dryrun), and answered. The webhook
// and `htc check` both call Admitter.Decide(ctx, req) (Decision, Report),
// so the offline CLI decides exactly as the webhook does.
//
// # What a check finds: three words, and a report beside them
//
// Three result types carry the answer from the check to the HTTP
// response; each is built from the one before:
//
//   - dryrun.Verdict: what one check of one state of the stores (render,
//     policy, syntax, schema, haproxy -c, the embedded tests) found:
//     passed, or the phase and reason it failed, and what it rendered.
//   - dryrun.Diagnosis: every failure of one state, found by rounds of
//     checks that hide what failed, each attributed to its objects
//     (dryrun.Failure); Diagnosis.Verdict is the verdict it stands on.
//   - Decision: the answer to one Request (allowed or denied, the reason,
//     the warnings, the failures the change introduces): all a response
//     is built from.
//
// Beside them, never read to build an answer:
//
//   - dryrun.Trace: how a check got there (durations, cache hits, the
//     stores it rendered over), returned beside its Verdict by CheckWith
//     and Diagnose. Its durations tell the confirming diagnosis whether
//     the deadline leaves time for it; nothing of it reaches a response.
//   - Report: what the decision learned on the way (its verdict and that
//     verdict's trace, the failures that were there before, whether it
//     was reused, rendered alike, warned, hidden, incomplete or busy),
//     built beside the Decision in the judge's last step (decide) and
//     returned beside it by Decide for those who observe the path (the
//     webhook's Outcome, the controller's metrics, Events and shadow
//     checks, htc audit, tests; the repeated decisions' rule of what may
//     be reused).
//
// # The path of one admission
//
// From the TLS server to the verdict and back, one hop a line
// (package.function, then its file); each calls the next, "←" is what
// comes back. A hop is a function the request passes through that decides
// something about it; what a hop only uses (the render engine, the
// checker, the caches, flight, the check slots, the baseline) is named on
// its line, not counted as a hop. 15 hops in 9 files:
//
//	 1 webhook.Handler.ServeHTTP        webhook/handler.go   decode the AdmissionReview, the budget (timeoutOf)
//	 2 webhook.Handler.admit            webhook/handler.go   not ready, other operations, the structural
//	                                                         check, Registry.Lookup
//	 3 webhook.Handler.validate         webhook/handler.go   the one deadline: set, the Validator under it,
//	                                                         answered at it
//	 4 controller.observed              controller/validators.go  (the controller's Validator) metrics,
//	                                                         Events and shadow samples, from the Report
//	 5 admission.Admitter.Decide        admitter.go          a config → Config; no config: denied; not
//	                                                         watched: allowed; else the repeated decisions
//	 6 admission.repeats.decide         repeat.go            an identical request against the same state:
//	                                                         its decision, kept or shared (flight.Group.Do)
//	 7 admission.Admitter.decideResource admitter.go         watched.Model.StoreChanges (none: allowed),
//	                                                         dryrun.Pipeline.RendersAlike (allowed),
//	                                                         watched.Apply, a check slot (slots.go) or busy
//	 8 admission.Admitter.judge         judge.go             against the Baseline (baseline.go)
//	 9 dryrun.Pipeline.Diagnose         dryrun/diagnose.go   rounds of checks, hiding what failed
//	10 dryrun.Pipeline.CheckWith        dryrun/check.go      one check, then the embedded tests
//	                                                         (testrun.Cache, shared)
//	11 dryrun.Pipeline.renderAndCheck   dryrun/check.go      render.Engine.Render, then the check phases
//	                                                         (dryrun.checkCache, shared; haproxy.Checker)
//	                                                         ← dryrun.Verdict (and its Trace), dryrun.Diagnosis
//	12 admission.confirm                judge.go             once more with nothing hidden, if anything was
//	                                                         and the deadline leaves time for it
//	13 admission.Admitter.decide        judge.go             ← Decision, Report
//	14 admission.Admitter.redacted      secrecy.go           Secret data and the process's values removed
//	15 webhook.FromDecision             webhook/response.go  ← the AdmissionResponse
//
// Admitter.Config (a proposed HAProxyTemplateConfig, Decide's first
// branch) takes 6 and 7 in its own way: not this controller's config:
// allowed, a warning; config.FromUnstructured and dryrun.Build
// (validation, templates); storesFor (proposed.go: the live stores that
// keep what it reads, else what the Source lists, one proposal listing at
// a time; not listed in time: denied, saying so); a check slot; judge over
// those stores against the baseline moved to them, whose decide says,
// unless RevealLiveState, where the proposal fails over the live state but
// not what (hideLiveStateDetails, secrecy.go).
//
// # Deadlines
//
// Three places set or reason about the admission's deadline, and no
// other code does:
//
//  1. The owner, webhook.Handler.validate: it sets the deadline, counted
//     from the request's arrival (timeoutOf: the API server's ?timeout=
//     capped by the configured admission timeout, 5 s by default and 25 s
//     for a config), and answers at it even if the Validator has not
//     returned. htc check is the other owner: it sets the deadline of its
//     one decision. The Admitter sets none.
//  2. The Admitter's one question, deadline.go: does the deadline leave
//     time for this work? A check slot's wait asks it (no: busy at once,
//     ReasonBusy; else wait while a check still fits, see slots.go), and
//     so does the confirming diagnosis (time for two more rounds, by the
//     first diagnosis's Trace).
//  3. The rule for shared runs, flight.Group.Do, below.
//
// Below them the checks only honour ctx. They have fixed bounds of their
// own against a hung template or child, which are not the admission's
// deadline: render and check, Env.RenderCheckTimeout, only for a ctx that
// has no deadline (htc render, tests); one haproxy -c run
// (haproxy.Options.Timeout); one run of the embedded tests
// (testrun.Options.Timeout). A check that runs out of time says in which
// phase (dryrun.Verdict.TimedOut), and the judge denies for it.
//
// One rule for shared runs, alike for the repeated decisions here, the
// check cache and the embedded tests' cache (package dryrun), implemented
// once by flight.Group.Do (its users pass their ctx and nothing else):
//
//   - A run shared by several callers is nobody's: it carries the values
//     of the caller that started it, but neither its cancellation nor its
//     deadline.
//   - It carries a bound of its own, fixed when it starts: a decision, the
//     deadline of the request that started it
//     (flight.Group.StartersDeadline); a check and the embedded tests,
//     none in the flight: they bound themselves (haproxy's timeout, the
//     test timeout).
//   - It ends at that bound, or when the last caller waiting for it has
//     left.
//   - Each caller waits under its own deadline: when that comes first (or
//     the caller is cancelled), it is answered at once (a decision:
//     ReasonTimedOut, or cancelled), and the run goes on for the others.
//     A caller whose deadline is the run's bound or later waits for the
//     run's own answer, which the bound brings: the request that started
//     a decision gets its "timed out during ..." rather than a bare
//     deadline.
//
// The caches on the way (repeated decisions, the baseline, the redactor,
// and those of packages render, dryrun and haproxy) are listed in one
// table, with their keys, invalidation, bounds and metrics, in
// docs/caches.md.
package admission
