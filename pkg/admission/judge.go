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

// maxJudgeRounds bounds the checks of one judgement: the first, and a
// few more when failures that were there before the change resurface.
const maxJudgeRounds = 4

// proposal is what one judgement needs to know about a change.
type proposal struct {
	pipeline *dryrun.Pipeline
	stores   store.Set
	// changed names the changed object in every store the change touches.
	changed []bundle.ObjectRef
	// deleted is the object a DELETE removes (zero otherwise).
	deleted bundle.ObjectRef
	// action is Deny or Warn.
	action watched.Admission
}

// judge checks a proposal against the baseline: the objects the baseline
// already knows are broken are left out (unless the change touches them),
// the rest is checked, and only failures the baseline does not have deny
// (or, in Warn mode, warn). Failures that were there before are warnings.
func (a *Admitter) judge(ctx context.Context, base *Baseline, pr proposal) Decision {
	known := base.keys()
	diag := pr.pipeline.Diagnose(ctx, pr.stores, dryrun.DiagnoseOptions{
		Hidden:       base.quarantine(pr.changed),
		MaxRounds:    maxJudgeRounds,
		Stop:         func(f dryrun.Failure) bool { return !known[f.Key()] },
		RunnableCode: base.runnableCode(),
	})
	last := lastVerdict(diag)
	if last.TimedOut {
		d := Deny(last.Phase, last.Reason)
		d.Verdict = last
		return d
	}
	var existing, introduced []dryrun.Failure
	if full := a.unquarantined(ctx, base, pr, diag, known); full != nil {
		diag, last = full, lastVerdict(full)
		existing, introduced = split(full.Failures, known)
	} else {
		existing = a.existing(ctx, base, pr, diag, known)
		_, introduced = split(diag.Failures, known)
	}
	var d Decision
	switch {
	case len(introduced) > 0 && pr.action == watched.AdmissionWarn:
		d = Allow(append([]string{"would be denied (validationAction: Warn): " + a.introducedReason(base, pr, introduced)}, existingWarnings(existing)...)...)
		d.Warned = true
	case len(introduced) > 0:
		d = Deny(introduced[0].Phase, a.introducedReason(base, pr, introduced))
	case !diag.Complete:
		d = Deny(last.Phase, "the change could not be judged: failures kept appearing in objects it does not touch; "+last.Reason)
		d.Incomplete = true
	default:
		d = Allow(append(existingWarnings(existing), last.Warnings...)...)
	}
	d.Introduced, d.Existing, d.Verdict = introduced, existing, last
	return d
}

// lastVerdict is the verdict of the diagnosis's last round.
func lastVerdict(d *dryrun.Diagnosis) *dryrun.Verdict {
	if d.Passing != nil {
		return d.Passing
	}
	return d.First
}

// existing returns the baseline's failures that are still there with the
// change. Once the change passed without the quarantined objects, those
// are the only ones that can fail; a change can fix them without touching
// them (e.g. by creating the Service a broken Ingress needs), so, time
// permitting, they are checked again with the change; failures found then
// with a key the baseline does not have were introduced after all (the
// change broke them differently). Without the time, the baseline's list
// stands (stillFailing).
func (a *Admitter) existing(ctx context.Context, base *Baseline, pr proposal, diag *dryrun.Diagnosis, known map[string]bool) []dryrun.Failure {
	hidden := base.quarantine(pr.changed)
	if len(hidden) == 0 || diag.Passing == nil || !timeFor(ctx, 2*roundTime(diag.Passing)) {
		return stillFailing(base, pr.changed, diag)
	}
	again := pr.pipeline.Diagnose(ctx, pr.stores, dryrun.DiagnoseOptions{MaxRounds: len(hidden) + 1, SkipTests: true, RunnableCode: base.runnableCode()})
	var out []dryrun.Failure
	for _, f := range again.Failures {
		if known[f.Key()] {
			out = append(out, f)
		} else {
			// Introduced, also when the rounds ran out before the rest
			// was found: the proposed state has it and the baseline does
			// not. The judge denies.
			diag.Failures = append(diag.Failures, f)
		}
	}
	if !again.Complete {
		return stillFailing(base, pr.changed, diag)
	}
	return out
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

// unquarantined confirms failures that look introduced while objects of
// the baseline were quarantined: hiding a broken object can itself break
// the change (an Ingress that now reads a quarantined Secret finds it
// missing), so, time permitting, the proposed state is diagnosed again
// with nothing hidden. It returns that diagnosis when it completed, nil
// when no confirmation was needed or it could not finish (the first
// diagnosis then stands: the change is denied).
func (a *Admitter) unquarantined(ctx context.Context, base *Baseline, pr proposal, diag *dryrun.Diagnosis, known map[string]bool) *dryrun.Diagnosis {
	hidden := base.quarantine(pr.changed)
	if len(hidden) == 0 || !slices.ContainsFunc(diag.Failures, func(f dryrun.Failure) bool { return !known[f.Key()] }) {
		return nil
	}
	if v := lastVerdict(diag); !timeFor(ctx, 2*roundTime(v)) {
		return nil
	}
	full := pr.pipeline.Diagnose(ctx, pr.stores, dryrun.DiagnoseOptions{MaxRounds: len(hidden) + maxJudgeRounds, SkipTests: true, RunnableCode: base.runnableCode()})
	if !full.Complete {
		return nil
	}
	return full
}

// roundTime is how long one check took (render and check phases).
func roundTime(v *dryrun.Verdict) time.Duration {
	var d time.Duration
	for _, t := range v.Durations {
		d += t
	}
	return d
}

// timeFor reports whether ctx leaves at least d.
func timeFor(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
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
	}
	return fmt.Sprintf("%s is still needed by %s: %s", pr.deleted, strings.Join(users, ", "), reason)
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
