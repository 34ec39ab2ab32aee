package dryrun

import (
	"context"
	"slices"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// defaultMaxRounds bounds the checks of one Diagnose.
const defaultMaxRounds = 16

// Diagnosis is the set of failures of one state of the stores: every
// failure found, attributed to its objects, until the state without those
// objects passed.
type Diagnosis struct {
	// Failures in the order they were found.
	Failures []Failure
	// Hidden are the objects the failures were attributed to, and their
	// dependents: the state without them passed (when Passing is set).
	Hidden []bundle.ObjectRef
	// First is the verdict of the state as given (with only the objects
	// DiagnoseOptions.Hidden hidden).
	First *Verdict
	// Passing is the verdict of the state without Hidden when it passed;
	// nil when the diagnosis stopped before (time ran out, MaxRounds, or a
	// failure no object could be named for).
	Passing *Verdict
	// Complete reports that every failure was found: the rest passed, or
	// the last failure names no object (nothing more can be hidden, and
	// everything else is judged by that failure's reason).
	Complete bool
}

// Verdict is the verdict the diagnosis stands on: Passing when the state
// without Hidden passed, else First.
func (d *Diagnosis) Verdict() *Verdict {
	if d.Passing != nil {
		return d.Passing
	}
	return d.First
}

// Keys returns the set of the failures' keys.
func (d *Diagnosis) Keys() map[string]bool {
	out := make(map[string]bool, len(d.Failures))
	for _, f := range d.Failures {
		out[f.Key()] = true
	}
	return out
}

// DiagnoseOptions tune Diagnose.
type DiagnoseOptions struct {
	// Hidden are hidden from the start (e.g. objects a baseline already
	// knows are broken).
	Hidden []bundle.ObjectRef
	// MaxRounds bounds the number of checks; zero means 16.
	MaxRounds int
	// Stop, when set, ends the diagnosis after a round that found a
	// failure for which it returns true (e.g. one a change introduced).
	Stop func(Failure) bool
	// SkipTests leaves the embedded tests out: they depend on the config
	// alone, so a diagnosis of objects can do without them.
	SkipTests bool
	// RunnableCode is CheckOptions.RunnableCode of every round.
	RunnableCode func(fingerprint string) bool
	// Record is CheckOptions.Record of every round: the last round that
	// renders (the one without the broken objects) leaves its recording.
	Record bool
}

// Diagnose checks stores; while the check fails with failures it can
// attribute to objects, it records them, hides those objects and their
// dependents from the stores, and checks again. Rendering stops at its
// first failure and one broken object can mask another, so this is how the
// complete failure set of a state is found. Each round is one CheckWith;
// the Trace returned is that of the round whose verdict the diagnosis
// stands on (Diagnosis.Verdict).
func (p *Pipeline) Diagnose(ctx context.Context, stores store.Set, opts DiagnoseOptions) (*Diagnosis, Trace) {
	d := &Diagnosis{Hidden: slices.Clone(opts.Hidden)}
	var first Trace
	rounds := opts.MaxRounds
	if rounds <= 0 {
		rounds = defaultMaxRounds
	}
	for range rounds {
		v, t := p.CheckWith(ctx, stores.WithoutNames(byStore(d.Hidden)), CheckOptions{SkipTests: opts.SkipTests, RunnableCode: opts.RunnableCode, Record: opts.Record})
		if d.First == nil {
			d.First, first = v, t
		}
		if v.Passed() {
			d.Passing, d.Complete = v, true
			return d, t
		}
		if v.TimedOut || ctx.Err() != nil {
			return d, first
		}
		fs := failures(v)
		d.Failures = append(d.Failures, fs...)
		if opts.Stop != nil && slices.ContainsFunc(fs, opts.Stop) {
			return d, first
		}
		before := len(d.Hidden)
		for _, f := range fs {
			d.Hidden = addRefs(d.Hidden, f.Objects...)
			d.Hidden = addRefs(d.Hidden, f.Dependents...)
		}
		if len(d.Hidden) == before {
			d.Complete = true // nothing more to hide: an unattributed failure
			return d, first
		}
	}
	return d, first
}

// addRefs appends the refs not in list yet.
func addRefs(list []bundle.ObjectRef, refs ...bundle.ObjectRef) []bundle.ObjectRef {
	for _, r := range refs {
		if !slices.Contains(list, r) {
			list = append(list, r)
		}
	}
	return list
}

// byStore groups refs by store key, as store.Set.WithoutNames takes them.
func byStore(refs []bundle.ObjectRef) map[string][]store.Name {
	out := map[string][]store.Name{}
	for _, r := range refs {
		out[r.Store] = append(out[r.Store], store.Name{Namespace: r.Namespace, Name: r.Name})
	}
	return out
}
