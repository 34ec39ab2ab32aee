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
//	 2 webhook.Handler.admit            webhook/handler.go   not ready, other operations, Registry.Lookup,
//	                                                         the objects decoded (a config's: its head and
//	                                                         JSON, webhook.ObjectJSON), the structural check
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
// allowed, a warning; config.FromJSON (the JSON the webhook handed on,
// else config.FromUnstructured of the object) and dryrun.Build
// (validation, templates); storesFor (proposed.go: the live stores that
// keep what it reads, else what the Source lists, one proposal listing at
// a time; not listed in time: denied, saying so); a check slot; the
// live render's fragment records carried into the proposed pipeline where
// the config leaves a fragment as it is (dryrun.Pipeline.CarryFrom); judge over
// those stores against the baseline moved to them, whose decide says,
// unless RevealLiveState, where the proposal fails over the live state but
// not what (hideLiveStateDetails, secrecy.go).
//
// # Deadlines
//
// Three parts of the code set or reason about the admission's deadline,
// and no other code does. Counted as a place: a function that reads ctx's
// deadline (ctx.Deadline, time.Until of it) or sets one
// (context.WithDeadline, WithTimeout) for the run of a decision; its
// callers, which pass ctx on or ask it, are named beside it:
//
//  1. The owner of the run sets the deadline; nothing below it sets
//     another. For the webhook, webhook.Handler.validate: counted from
//     the request's arrival (timeoutOf: the API server's ?timeout=
//     capped by the configured admission timeout, 5 s by default and 25 s
//     for a config), and it answers at it even if the Validator has not
//     returned. Offline, decisionContext in cmd/htc: the deadline of one
//     decision of htc check or of htc audit (each Ingress), a render and
//     check and the embedded tests (90 s). The Admitter sets none.
//  2. The Admitter's one question, timeFor (deadline.go): does the
//     deadline leave time for this work? Asked before a check slot's wait
//     (slots.acquire: no, busy at once, ReasonBusy; else wait while a
//     check still fits) and before the confirming diagnosis (confirm,
//     judge.go: time for two more rounds, by the first diagnosis's Trace).
//  3. The rule for shared runs, flight.Group.Do (internal/flight, with
//     runContext and waitContext beside it), below.
//
// That is six functions in four files. This lists every line that reads
// or sets a deadline on the path; the others it prints are the fixed
// bounds below, haproxy's version query and the webhook server's
// shutdown:
//
//	grep -nE 'Deadline\(\)|context\.With(Deadline|Timeout)\(|time\.Until\(' pkg/webhook/*.go pkg/admission/*.go pkg/dryrun/*.go pkg/dryrun/testrun/*.go pkg/haproxy/*.go internal/flight/*.go cmd/htc/*.go | grep -v _test.go
//
// Below them the checks only honour ctx. They have fixed bounds of their
// own against a hung template or child, which never read ctx's deadline
// (the earlier of the two ends the work), set by whoever builds the
// checker or the pipeline: one render and check, Env.RenderCheckTimeout
// (unset for the webhook and the controller, whose deadlines bound it;
// 30 s for the htc commands that check, so that a template that loops
// ends in the checks of their baseline too, which no decision's deadline
// bounds); one haproxy -c run (haproxy.Options.Timeout); one run of the
// embedded tests (testrun.Options.Timeout). htc render has none of them:
// it renders until done or interrupted. A check that runs out of time
// says in which phase (dryrun.Verdict.TimedOut), and the judge denies for
// it.
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
