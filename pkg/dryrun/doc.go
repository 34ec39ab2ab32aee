// Package dryrun is htc's one check path: it turns an HAProxyTemplateConfig
// into a Pipeline (Build) and judges a state of the stores with it
// (Pipeline.Check), returning a Verdict. Every consumer calls Check: the
// admission of a watched resource or of a config (package admission, used
// by the webhook and `htc check`), and the controller's live loop, which
// publishes the verdict's bundle when it passed.
//
// Check reads top to bottom (the requirements' "three-phase dry run"):
//
//	Pipeline.Check(ctx, stores)
//	  → render (templates over the stores, for Env.BaseDir)   ┐ ctx's deadline
//	  → policy → syntax → schema ‖ `haproxy -c` (Checker)     ┘ (30 s if none)
//	  → the embedded tests (Workers: 1, 60 s; cached by config hash,
//	    concurrent callers share one run; package dryrun/testrun)
//	  → Verdict{Phase, Reason, Warnings, Bundle, BundleHash}
//	    (CheckWith returns its Trace beside it)
//
// Admission reaches it through Diagnose, one check a round, one file per
// step:
//
//	Pipeline.Diagnose(ctx, stores, opts)                 diagnose.go
//	  → CheckWith: no checker? failed; the tests after   check.go
//	    → renderAndCheck: render, then the check phases
//	      → checkCache.check: an equal bundle's outcome,
//	        or one shared run of Checker.Check           checkcache.go
//
// A Verdict is what one check found; its Trace (durations, cache hits,
// the stores it read), returned beside it, is how, for metrics and the
// shadow checks. A Diagnosis is every failure of one state, found by
// rounds of checks; Diagnose returns the Trace of the verdict it stands
// on (Diagnosis.Verdict).
//
// The deadline is the caller's: the webhook handler's for an admission
// (see package webhook), the live round's in the controller, the one the
// htc commands set. Check never reads it: it only honours ctx. Three fixed
// bounds of its own, each ending the work at the earlier of ctx's
// deadline and itself, stand against a template that loops or a hung
// child: one render and check (Env.RenderCheckTimeout, when the caller
// sets it: the htc commands that check, 30 s), one `haproxy -c` run
// (haproxy.Options.Timeout, 10 s) and one run of the embedded tests
// (testrun.Options.Timeout, 60 s). The last two are shared runs (the
// check cache, testrun.Cache), which follow the one rule written down in
// package admission's doc (flight.Group.Do): bound by their own timeout,
// not by the caller that started them, and ended when the last caller
// waiting for them has left; each caller waits under its own deadline.
//
// The pipeline depends on small interfaces, not on their implementations:
// a Checker (a *haproxy.Checker, chosen per config by Env.CheckerFor) and
// the test runner's Renderer. A pipeline built without a checker renders
// (`htc render` needs no haproxy) but fails every check.
//
// The bundle's text depends only on Env.BaseDir, the directory HAProxy
// reads it from: the checker relocates it into a private workspace for
// `haproxy -c`. So equal states render byte-identical bundles with equal
// hashes, and the bundle that passed is the one that is published.
//
// The check outcomes (by bundle hash) and the embedded test reports (by
// spec hash) are cached; docs/caches.md lists every cache on the path.
package dryrun
