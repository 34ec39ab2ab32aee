package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// maxJudgeRounds bounds the checks the judge makes of one change: the first, and a
// few more when failures that were there before the change resurface.
const maxJudgeRounds = 4

// proposal is what the judge needs to know about a change.
type proposal struct {
	pipeline *dryrun.Pipeline
	stores   store.Set
	// changed names the changed object in every store the change touches.
	changed []bundle.ObjectRef
	// deleted is the object a DELETE removes (zero otherwise).
	deleted bundle.ObjectRef
	// action is Deny or Warn.
	action watched.Admission
	// hideLiveState: the decision says where a proposed config fails
	// over the current resources, never what (hideLiveStateDetails).
	hideLiveState bool
}

// judge decides a proposal against the baseline (what is already broken
// in the live state); only failures the change introduces deny. In three
// steps:
//
//  1. Diagnose the proposal with the baseline's broken objects (and their
//     dependents) hidden, except those the change touches, stopping at the
//     first failure the baseline does not have: a candidate.
//  2. Confirm, when objects were hidden and the deadline leaves time for
//     it: diagnose once more with nothing hidden (confirm). Hiding an object
//     can itself fail the change, and the change can fix, or break anew,
//     what was hidden.
//  3. Attribute (decide): failures the baseline has are existing (a
//     warning each); the others are introduced and deny (Warn mode: a
//     warning). A check that timed out denies, and so does a diagnosis
//     whose rounds ran out before the rest passed (incomplete).
func (a *Admitter) judge(ctx context.Context, base *Baseline, pr proposal) (Decision, Report) {
	known := base.keys()
	hidden := base.quarantine(pr.changed)
	diag, trace := pr.pipeline.Diagnose(ctx, pr.stores, dryrun.DiagnoseOptions{
		Hidden:       hidden,
		MaxRounds:    maxJudgeRounds,
		Stop:         func(f dryrun.Failure) bool { return !known[f.Key()] },
		RunnableCode: base.runnableCode(),
	})
	if last := diag.Verdict(); last.TimedOut {
		return Deny(last.Phase, last.Reason), Report{Verdict: last, Trace: trace}
	}
	diag, trace, existing, introduced := confirm(ctx, base, pr, hidden, diag, trace)
	return a.decide(base, pr, diag, trace, existing, introduced)
}

// confirm is the judge's second step: the diagnosis the decision stands
// on, and its failures split into those the baseline has (existing) and
// the others (introduced). Without it (nothing was hidden, no time, or
// nothing to confirm), the first diagnosis stands: its candidates are
// introduced, and the baseline's failures the change did not fix
// (stillFailing) are existing. With it, one diagnosis of the proposal with
// nothing hidden (tests skipped: they depend on the config alone):
//
//   - after candidates, it replaces the first when it completes (a
//     candidate it does not find was caused by the hiding); when it does
//     not, the first stands and the change is denied;
//   - after the first passed, it tells which of the hidden failures are
//     still there (existing) and which the change broke differently
//     (introduced, also when its rounds ran out before the rest).
func confirm(ctx context.Context, base *Baseline, pr proposal, hidden []bundle.ObjectRef, first *dryrun.Diagnosis, trace dryrun.Trace) (diag *dryrun.Diagnosis, _ dryrun.Trace, existing, introduced []dryrun.Failure) {
	known := base.keys()
	_, candidates := split(first.Failures, known)
	stays := stillFailing(base, pr.changed, first)
	if len(hidden) == 0 || (len(candidates) == 0 && first.Passing == nil) {
		return first, trace, stays, candidates
	}
	_, cancel, ok := timeFor(ctx, 2*roundTime(trace))
	cancel()
	if !ok {
		return first, trace, stays, candidates
	}
	// Once the change passed without the hidden objects, only they can
	// fail: one round each and one to pass.
	rounds := len(hidden) + 1
	if len(candidates) > 0 {
		rounds = len(hidden) + maxJudgeRounds
	}
	full, fullTrace := pr.pipeline.Diagnose(ctx, pr.stores, dryrun.DiagnoseOptions{MaxRounds: rounds, SkipTests: true, RunnableCode: base.runnableCode()})
	existing, introduced = split(full.Failures, known)
	switch {
	case len(candidates) > 0 && full.Complete:
		return full, fullTrace, existing, introduced
	case len(candidates) > 0:
		return first, trace, stays, candidates
	case full.Complete:
		return first, trace, existing, introduced
	default:
		return first, trace, stays, introduced
	}
}

// decide is the judge's last step: the decision on what it found (see
// confirm), and its report (with trace, how the check it stands on got
// there). A proposed config's decision says where it fails over the
// current resources, not what, unless the Admitter reveals the live state
// (hideLiveStateDetails).
func (a *Admitter) decide(base *Baseline, pr proposal, diag *dryrun.Diagnosis, trace dryrun.Trace, existing, introduced []dryrun.Failure) (Decision, Report) {
	last := diag.Verdict()
	var d Decision
	r := Report{Verdict: last, Trace: trace, Existing: existing}
	switch {
	case len(introduced) > 0 && pr.action == watched.AdmissionWarn:
		d = Allow(append([]string{"would be denied (validationAction: Warn): " + a.introducedReason(base, pr, introduced)}, existingWarnings(existing)...)...)
		r.Warned = true
	case len(introduced) > 0:
		d = Deny(introduced[0].Phase, a.introducedReason(base, pr, introduced))
	case !diag.Complete:
		d = Deny(last.Phase, "the change could not be judged: failures kept appearing in objects it does not touch; "+last.Reason)
		r.Incomplete = true
	default:
		d = Allow(append(append(existingWarnings(existing), last.Warnings...), templateWarnings(last.Bundle, pr.changed)...)...)
	}
	d.Introduced = introduced
	if !pr.hideLiveState {
		return d, r
	}
	hidden, r := hideLiveStateDetails(d, r)
	r.Hidden = hidden.Reason != d.Reason
	return hidden, r
}

// templateWarnings are the warnings the templates gave (warn) about the
// changed objects, at most maxWarnings: those about other objects are
// not the requester's to read.
func templateWarnings(b *bundle.Bundle, changed []bundle.ObjectRef) []string {
	var out []string
	for _, c := range changed {
		out = append(out, b.WarningsAbout(c.Kind, c.Namespace, c.Name)...)
	}
	return out[:min(len(out), maxWarnings)]
}

// split divides failures into those the baseline knows and the others.
func split(fs []dryrun.Failure, known map[string]bool) (old, introduced []dryrun.Failure) {
	for _, f := range fs {
		if known[f.Key()] {
			old = append(old, f)
		} else {
			introduced = append(introduced, f)
		}
	}
	return old, introduced
}

// roundTime is how long one check took (render and check phases).
func roundTime(tr dryrun.Trace) time.Duration {
	var d time.Duration
	for _, t := range tr.Durations {
		d += t
	}
	return d
}

// stillFailing returns the baseline's failures the change did not fix: a
// failure of an object the change touches is fixed unless the diagnosis
// found it again.
func stillFailing(base *Baseline, changed []bundle.ObjectRef, diag *dryrun.Diagnosis) []dryrun.Failure {
	found := diag.Keys()
	var out []dryrun.Failure
	for _, f := range base.failures() {
		touched := slices.ContainsFunc(f.Objects, func(o bundle.ObjectRef) bool { return slices.Contains(changed, o) })
		if !touched || found[f.Key()] {
			out = append(out, f)
		}
	}
	return out
}

// introducedReason is the denial reason of failures a change introduced:
// the first failure (and how many more), and for a DELETE the objects that
// still need what it removes.
func (a *Admitter) introducedReason(base *Baseline, pr proposal, fs []dryrun.Failure) string {
	reason := fs[0].String()
	if ownFailure(fs[0], pr.changed) {
		// The requester knows which object it is: the reason alone, as the
		// template says it (e.g. "Service 'api' not found").
		reason = fs[0].Reason
	}
	if len(fs) > 1 {
		reason += fmt.Sprintf(" (and %d more)", len(fs)-1)
	}
	if pr.deleted.Name == "" {
		return reason
	}
	var users []string
	for _, r := range base.readers(pr.deleted) {
		users = append(users, r.String())
	}
	if len(users) == 0 {
		for _, f := range fs {
			for _, o := range f.Objects {
				if o != pr.deleted {
					users = append(users, o.String())
				}
			}
		}
	}
	if len(users) == 0 {
		return reason
	}
	if len(fs[0].Objects) > 0 {
		reason = fs[0].Reason // the objects are named as the users
		if namedAll(users, fs[0].Objects) {
			reason = fs[0].Detail() // and need not be named again
		}
	}
	return fmt.Sprintf("%s is still needed by %s: %s", pr.deleted, strings.Join(users, ", "), reason)
}

// namedAll reports whether names holds the name of every object of objs.
func namedAll(names []string, objs []bundle.ObjectRef) bool {
	for _, o := range objs {
		if !slices.Contains(names, o.String()) {
			return false
		}
	}
	return true
}

// ownFailure reports whether f is a failure of the changed object alone.
func ownFailure(f dryrun.Failure, changed []bundle.ObjectRef) bool {
	if len(f.Objects) != 1 {
		return false
	}
	o := f.Objects[0]
	return slices.ContainsFunc(changed, func(c bundle.ObjectRef) bool {
		return c.Kind == o.Kind && c.Namespace == o.Namespace && c.Name == o.Name
	})
}

// deletedRef names the object a DELETE removes, in its first store.
func deletedRef(req Request, changed []bundle.ObjectRef) bundle.ObjectRef {
	if req.Operation != store.Delete || len(changed) == 0 {
		return bundle.ObjectRef{}
	}
	return changed[0]
}
