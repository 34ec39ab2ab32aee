package dryrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
)

// Verdict is what one check found about one state of the stores: whether
// the configuration rendered from it passes every phase, and if not,
// where it failed and why, and what it rendered. How the check got there
// (times, caches, the stores it read) is not in it: CheckWith returns
// that as the check's Trace, beside the Verdict.
type Verdict struct {
	// Phase is the phase that failed; empty when the configuration passed.
	Phase phase.Phase
	// Reason is the short, user-readable failure (empty when it passed).
	Reason string
	// Err is the underlying failure (nil when it passed).
	Err error
	// TimedOut reports that the check ran out of time (Phase is the phase
	// it was in); the configuration itself may be fine.
	TimedOut bool
	// Warnings are HAProxy's simplified warnings of a passing check (and
	// the syntax and schema findings haproxy -c did not confirm).
	Warnings []string
	// Bundle is the rendered configuration (nil when rendering failed).
	Bundle *bundle.Bundle
	// BundleHash is Bundle.Hash() (empty when rendering failed), its file
	// digests remembered by the pipeline's bundle.Hasher.
	BundleHash string
	// CodeNotRun reports a bundle that loads code the caller did not
	// trust (CheckOptions.RunnableCode): only the policy, syntax and
	// schema phases ran, neither haproxy -c nor the embedded tests.
	CodeNotRun bool
}

// Trace is how a check reached its Verdict: what the controller's metrics
// count and the shadow checks replay. It is returned beside the Verdict
// (CheckWith, Diagnose) and nothing of it reaches a response.
type Trace struct {
	// Durations are the times of the phases that ran (render, policy,
	// syntax, schema, semantic, tests), also when one failed.
	Durations map[phase.Phase]time.Duration
	// Overruled are the syntax and schema findings haproxy -c did not
	// confirm: they did not fail the check.
	Overruled []haproxy.Overruled
	// Stores are the stores the check rendered over (for a round of
	// Diagnose, without the objects it hid): what a full render needs to
	// render the same state again (package shadow's admission samples).
	Stores store.Set
	// TestsCached reports that the embedded tests' report came from the
	// cache.
	TestsCached bool
	// CheckCached reports that the check phases' outcome came from the
	// cache of an equal bundle checked before (Durations then hold only
	// the render's).
	CheckCached bool
	// SemanticReused reports that haproxy -c did not run for this bundle:
	// it differs from one haproxy -c accepted only in maps HAProxy reads
	// as plain strings, or in maps a stub configuration accepted alone
	// (haproxy.Result.SemanticReused).
	SemanticReused bool
	// MapsCheckedAlone is how many maps a stub configuration accepted
	// instead (haproxy.Result.MapsCheckedAlone).
	MapsCheckedAlone int
	// SectionsCheckedAlone is how many added backend sections a stub
	// configuration accepted instead (haproxy.Result.SectionsCheckedAlone).
	SectionsCheckedAlone int
	// SectionsShapeKnown reports that no stub ran for them: one of the
	// same shape was accepted before (haproxy.Result.SectionsShapeKnown).
	SectionsShapeKnown bool
}

// CheckOptions tune one check.
type CheckOptions struct {
	// SkipTests leaves the embedded tests out.
	SkipTests bool
	// RunnableCode, when set, is asked about a bundle that loads code (a
	// code directive of spec.allowedDirectives: lua-load, ssl-provider,
	// external-check, ...) with its policy.CodeFingerprint; when it
	// answers false, haproxy -c and the embedded tests (which would run
	// that code) are skipped and the verdict rests on the policy, syntax
	// and schema phases (Verdict.CodeNotRun, with a warning). Admission
	// sets it to accept only the running configuration's code: no
	// admission runs code a request brought. Nil runs any code the
	// config's allowedDirectives permit (the live loop: the stored
	// configuration is the operator's).
	RunnableCode func(fingerprint string) bool
	// Record makes the render record its loops' iterations for later
	// renders to replay (render.Input.Record): the live loop's checks of
	// the live state set it, so that admissions render incrementally.
	Record bool
}

// TestsNotRunWarning is the warning of a verdict whose embedded tests did
// not run because the config may load code.
const TestsNotRunWarning = "the configuration may load code (spec.allowedDirectives): its embedded tests, which run haproxy -c over their fixtures, did not run at admission, since no admission runs code a request brought; the controller runs them before publishing"

// CodeNotRunWarning is the warning of a verdict whose code did not run.
const CodeNotRunWarning = "the configuration loads code (spec.allowedDirectives) that the running configuration does not: haproxy -c and the embedded tests did not run at admission, since no admission runs code a request brought; the controller checks it before publishing"

// Passed reports whether the configuration passed every phase.
func (v *Verdict) Passed() bool { return v.Phase == "" && v.Err == nil }

// Check renders the configuration over stores and checks it: render →
// policy → syntax → schema → `haproxy -c` (render and check bounded by
// Env.RenderCheckTimeout when set) → the embedded tests (Workers: 1, 60 s,
// cached by config hash). ctx bounds the whole check. It is the one
// check path: admission of a watched resource or of a config, htc check and
// the controller's live loop all call it. Check drops the check's Trace:
// CheckWith returns it.
func (p *Pipeline) Check(ctx context.Context, stores store.Set) *Verdict {
	v, _ := p.CheckWith(ctx, stores, CheckOptions{})
	return v
}

// CheckWith is Check, tuned by opts, returning beside the Verdict how the
// check got there (its Trace).
func (p *Pipeline) CheckWith(ctx context.Context, stores store.Set, opts CheckOptions) (*Verdict, Trace) {
	v, t := &Verdict{}, Trace{Durations: map[phase.Phase]time.Duration{}, Stores: stores}
	if p.checker == nil {
		return v.fail(ctx, &phase.Error{Phase: phase.Semantic, Reason: "no HAProxy checker is configured"}), t
	}
	if err := p.renderAndCheck(ctx, stores, opts, v, &t); err != nil {
		return v.fail(ctx, err), t
	}
	if v.CodeNotRun {
		v.Warnings = append(v.Warnings, CodeNotRunWarning)
		return v, t
	}
	if opts.SkipTests {
		return v, t
	}
	if opts.RunnableCode != nil && policy.GrantsCode(p.Config.Spec.AllowedDirectives) && !p.cache.Cached(p.Hash) {
		// The tests render their own fixtures, whose bundles may load
		// code the one above did not: under a code grant, an admission
		// runs only tests whose report the live loop already has.
		v.CodeNotRun = true
		v.Warnings = append(v.Warnings, TestsNotRunWarning)
		return v, t
	}
	start := time.Now()
	report, cached, err := p.Tests(ctx)
	t.Durations[phase.Tests] = time.Since(start)
	if err == nil {
		err = report.Err()
	}
	if err != nil {
		return v.fail(ctx, &phase.Error{Phase: phase.Tests, Reason: phase.Reason(err), Err: err}), t
	}
	t.TestsCached = cached
	return v, t
}

// renderAndCheck renders and checks under ctx (and Env.RenderCheckTimeout
// when set, see renderCheckBound), recording the bundle, its hash and the
// warnings in v, the durations and caches in t.
func (p *Pipeline) renderAndCheck(ctx context.Context, stores store.Set, opts CheckOptions, v *Verdict, t *Trace) error {
	ctx, cancel := p.renderCheckBound(ctx)
	defer cancel()
	start := time.Now()
	b, err := p.render(ctx, stores, opts.Record)
	t.Durations[phase.Render] = time.Since(start)
	if err != nil {
		return err
	}
	v.Bundle, v.BundleHash = b, p.hasher.Hash(b)
	run, key := p.checker.Check, v.BundleHash
	if opts.RunnableCode != nil {
		if fp := p.CodeFingerprint(b); fp != "" && !opts.RunnableCode(fp) {
			run, key, v.CodeNotRun = p.checker.CheckStatic, v.BundleHash+"/static", true
		}
	}
	res, cached, err := p.checks.check(ctx, run, b, key, p.env.Shortcuts.On(shortcut.MapOnly))
	t.CheckCached = cached
	if res != nil {
		if !cached { // a cached outcome's durations are an earlier check's
			for ph, d := range res.Durations {
				t.Durations[ph] = d
			}
		}
		v.Warnings, t.Overruled, t.SemanticReused, t.MapsCheckedAlone = res.Warnings, res.Overruled, res.SemanticReused, res.MapsCheckedAlone
		t.SectionsCheckedAlone, t.SectionsShapeKnown = res.SectionsCheckedAlone, res.SectionsShapeKnown
	}
	return err
}

// renderCheckBound is ctx bounded by Env.RenderCheckTimeout, a fixed
// bound of one render and check against a template that loops, like
// haproxy's timeout for one haproxy -c: it never reads ctx's deadline (the
// earlier of the two ends the check). Unset, ctx as it is: the caller owns
// the deadline (the webhook handler's for an admission, the live round's
// in the controller).
func (p *Pipeline) renderCheckBound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.env.RenderCheckTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.env.RenderCheckTimeout)
}

// CodeFingerprint is policy.CodeFingerprint of b under the config's
// allowedDirectives: "" when b loads no code.
func (p *Pipeline) CodeFingerprint(b *bundle.Bundle) string {
	return policy.CodeFingerprint(b, p.Config.Spec.AllowedDirectives)
}

// fail records err in v and returns v. A deadline says which phase ran out
// of time instead of the phase's own message.
func (v *Verdict) fail(ctx context.Context, err error) *Verdict {
	v.Err = err
	v.Phase, _ = phase.Of(err)
	if v.Phase == "" {
		v.Phase = phase.Semantic // the checker's own failure (haproxy did not start)
	}
	v.Reason = phase.Reason(err)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		v.TimedOut = true
		what := "rendering and checking the configuration"
		if v.Phase == phase.Tests {
			what = "the embedded validation tests"
		}
		v.Reason = fmt.Sprintf("validation timed out during %s", what)
	}
	return v
}
