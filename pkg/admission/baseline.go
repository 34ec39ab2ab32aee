package admission

import (
	"context"
	"fmt"
	"slices"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Baseline is the diagnosis of the live state: what is already broken in
// the current resources. Admission judges a change against it: only
// failures the change introduces are denied.
type Baseline struct {
	// Pipeline is the pipeline the diagnosis ran with; a baseline of
	// another pipeline (an older config) is ignored.
	Pipeline *dryrun.Pipeline
	// Diagnosis is the live state's diagnosis.
	Diagnosis *dryrun.Diagnosis
}

// SetBaseline replaces the baseline (the controller's live loop computes it
// whenever the live state changed).
func (a *Admitter) SetBaseline(b *Baseline) { a.baseline.Store(b) }

// Baseline returns the baseline of st's pipeline, or nil.
func (a *Admitter) Baseline(st *State) *Baseline {
	b := a.baseline.Load()
	if b == nil || st == nil || b.Pipeline != st.Pipeline || b.Diagnosis == nil {
		return nil
	}
	return b
}

// failures returns the baseline's failures (none for a nil baseline).
func (b *Baseline) failures() []dryrun.Failure {
	if b == nil {
		return nil
	}
	return b.Diagnosis.Failures
}

// keys returns the baseline's failure keys.
func (b *Baseline) keys() map[string]bool {
	if b == nil {
		return map[string]bool{}
	}
	return b.Diagnosis.Keys()
}

// quarantine returns the objects a change is judged without: the objects
// of the baseline's failures and their dependents, except those the change
// touches. A change to a failing object is judged on its own, together
// with the objects that depend on it.
func (b *Baseline) quarantine(changed []bundle.ObjectRef) []bundle.ObjectRef {
	var out []bundle.ObjectRef
	for _, f := range b.failures() {
		touched := slices.ContainsFunc(f.Objects, func(o bundle.ObjectRef) bool { return slices.Contains(changed, o) })
		for _, o := range f.Objects {
			if !touched && !slices.Contains(changed, o) && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
		for _, o := range f.Dependents {
			if !touched && !slices.Contains(changed, o) && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// movedTo returns the baseline with its objects' store keys moved to the
// stores of another config's model that watch the same resource (a
// proposed config may name its stores differently). Objects of resources
// the other model does not watch are dropped from the quarantine.
func (b *Baseline) movedTo(m *watched.Model) *Baseline {
	moved := func(refs []bundle.ObjectRef) []bundle.ObjectRef {
		var out []bundle.ObjectRef
		for _, r := range refs {
			from, ok := b.Pipeline.Model.Get(r.Store)
			if !ok {
				continue
			}
			for _, to := range m.For(from.GVR) {
				r.Store = to.Key
				out = append(out, r)
			}
		}
		return out
	}
	d := *b.Diagnosis
	d.Failures = make([]dryrun.Failure, len(b.Diagnosis.Failures))
	for i, f := range b.Diagnosis.Failures {
		f.Objects, f.Dependents = moved(f.Objects), moved(f.Dependents)
		d.Failures[i] = f
	}
	return &Baseline{Pipeline: b.Pipeline, Diagnosis: &d}
}

// readers returns the objects whose rendering read obj in the baseline's
// last rendered bundle.
func (b *Baseline) readers(obj bundle.ObjectRef) []bundle.ObjectRef {
	if b == nil {
		return nil
	}
	for _, v := range []*dryrun.Verdict{b.Diagnosis.Passing, b.Diagnosis.First} {
		if v == nil {
			continue
		}
		if src := v.Bundle.Sources(); src != nil {
			return src.Readers(obj)
		}
	}
	return nil
}

// changedRefs names the request's object in every store the change
// touches.
func changedRefs(req Request, keys []string) []bundle.ObjectRef {
	obj := req.Object
	if obj == nil {
		obj = req.OldObject
	}
	if obj == nil {
		return nil
	}
	n := store.NameOf(obj)
	out := make([]bundle.ObjectRef, 0, len(keys))
	for _, k := range keys {
		out = append(out, bundle.ObjectRef{Store: k, Kind: obj.GetKind(), Namespace: n.Namespace, Name: n.Name})
	}
	return out
}

// maxWarnings bounds the warnings of one decision.
const maxWarnings = 10

// existingWarnings turns failures that were there before a change into
// one warning line each (at most maxWarnings, then a count).
func existingWarnings(fs []dryrun.Failure) []string {
	var out []string
	for i, f := range fs {
		if i == maxWarnings-1 && len(fs) > maxWarnings {
			out = append(out, fmt.Sprintf("and %d more failures that were there before this change (see the config's status.failures)", len(fs)-i))
			break
		}
		out = append(out, "failing before this change (not denied): "+f.String())
	}
	return out
}

// resourceAdmission is how a watched resource's changes are admitted.
func resourceAdmission(m *watched.Model, keys []string) watched.Admission {
	adm := watched.AdmissionOff
	for _, k := range keys {
		if r, ok := m.Get(k); ok && r.Admission == watched.AdmissionDeny {
			return watched.AdmissionDeny
		} else if ok && r.Admission == watched.AdmissionWarn {
			adm = watched.AdmissionWarn
		}
	}
	return adm
}

// runnableCode is the dryrun.CheckOptions.RunnableCode of a change judged
// against b: only the code the running configuration loads (b's bundle)
// may run in the checks; a bundle that loads other code, or any code
// before there is a baseline, is checked without haproxy -c and without
// the embedded tests. No admission runs code a request brought.
func (b *Baseline) runnableCode() func(fingerprint string) bool {
	return func(fp string) bool {
		if b == nil {
			return false
		}
		for _, v := range []*dryrun.Verdict{b.Diagnosis.First, b.Diagnosis.Passing} {
			if v != nil && v.Bundle != nil {
				return fp == b.Pipeline.CodeFingerprint(v.Bundle)
			}
		}
		return false
	}
}

// Retain makes the caches of the current State's pipeline forget what
// they keep of bundles other than its baseline's (dryrun.Pipeline.Retain):
// after admissions, the texts of their proposals. The controller calls it
// at its idle memory return; the next admission is answered as before, a
// little slower once. Without a baseline of the State's pipeline it does
// nothing (a new config's first round has not been judged yet).
func (a *Admitter) Retain() {
	st := a.State()
	b := a.Baseline(st)
	if b == nil {
		return
	}
	if v := b.Diagnosis.Verdict(); v != nil && v.Bundle != nil {
		st.Pipeline.Retain(v.Bundle)
	}
}

// LearnShapes lets the current State's pipeline learn, from its
// baseline's bundle, the shapes of backend sections proposals commonly
// add (dryrun.Pipeline.LearnShapes), and returns how many haproxy -c runs
// that took. The controller calls it in quiet periods. Without a baseline
// it does nothing.
func (a *Admitter) LearnShapes(ctx context.Context) int {
	st := a.State()
	b := a.Baseline(st)
	if b == nil {
		return 0
	}
	if v := b.Diagnosis.Verdict(); v != nil && v.Bundle != nil {
		return st.Pipeline.LearnShapes(ctx, v.Bundle)
	}
	return 0
}
