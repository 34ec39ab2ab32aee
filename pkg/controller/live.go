package controller

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/controller/objstatus"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/store"
)

// liveTimeout bounds one live round: render, check, tests, publish, reload.
const liveTimeout = 2 * time.Minute

// Retry back-off of a round: when HAProxy's master socket cannot be
// reached, and when a round timed out.
const (
	minReloadRetry = time.Second
	maxReloadRetry = 30 * time.Second
)

// live keeps what runs in line with the actual stores: on every change
// (debounced) it renders the live configuration with the same pipeline as
// admission (dryrun.Pipeline.Check, embedded tests included), reports the
// outcome (log, metrics, the Valid condition and an Event), and, when
// publishing, writes the checked bundle into the output directory and
// reloads HAProxy through its master socket. A configuration that fails is
// never written: the last good one keeps serving.
//
// One round runs at a time (mu); admissions never take mu.
type live struct {
	admitter *admission.Admitter // its State is the live state
	out      *publish.Dir        // nil: validate only
	master   *master.Client      // nil: publish without reloading
	status   *cfgstatus.Reporter
	// objStatus writes the status documents of each accepted round; nil:
	// none are written.
	objStatus *objstatus.Writer
	metrics   *metrics.Set
	log       *slog.Logger
	// record makes the live renders keep their fragments' records, which
	// later renders (admissions) reuse (render.Input.Record).
	record bool
	// shadow is offered every live render for the shortcut checks, and
	// interrupted by each round (nil: none).
	shadow *shadow.Verifier

	changes atomic.Uint64 // incremented by trigger and triggerSettled
	signal  chan struct{} // capacity 1: a round is wanted
	// settled (capacity 1): a round is wanted for updates of an object's
	// status only (debouncer.settledQuiet).
	settled chan struct{}
	// firstChange is when the first change not yet taken by a round
	// arrived (Unix nanoseconds, 0: none); firstSettled likewise for the
	// changes triggerSettled records.
	firstChange, firstSettled atomic.Int64

	mu         sync.Mutex
	roundStart uint64 // changes seen when the last round started
	retryIn    time.Duration
	retry      *time.Timer
	last       *lastDiagnosis // the last live diagnosis (mu)
	// timeout bounds a round (0: liveTimeout).
	timeout time.Duration
	// plane is how the published files reach HAProxy (dataplane.go).
	plane planeState

	// checkerVersion is the version of the HAProxy that checks (haproxy
	// -v); empty when unknown, then no version skew is reported.
	checkerVersion string
}

// newLive returns a live loop that compares what HAProxy runs with the
// files every DefaultRuntimeCheckEvery runtime rounds and does not pace
// reloads (the controller sets both from its Options).
func newLive(a *admission.Admitter, out *publish.Dir, mc *master.Client, status *cfgstatus.Reporter, m *metrics.Set, log *slog.Logger) *live {
	return &live{admitter: a, out: out, master: mc, status: status, metrics: m, log: log, record: true, signal: make(chan struct{}, 1), settled: make(chan struct{}, 1),
		plane: planeState{checkEvery: DefaultRuntimeCheckEvery}}
}

// trigger records a change of the stores or the config. It never blocks.
func (l *live) trigger() {
	l.firstChange.CompareAndSwap(0, time.Now().UnixNano())
	l.changes.Add(1)
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// triggerSettled records an update that changed only an object's status
// (informer.Updates.Settled): a change like any other, whose round waits
// longer for company (StatusDebounce). It never blocks.
func (l *live) triggerSettled() {
	l.firstSettled.CompareAndSwap(0, time.Now().UnixNano())
	l.changes.Add(1)
	select {
	case l.settled <- struct{}{}:
	default:
	}
}

// run renders a round after each debounced burst of changes until ctx ends.
func (l *live) run(ctx context.Context, d *debouncer) {
	l.mu.Lock()
	l.plane.ctx = ctx
	l.mu.Unlock()
	defer func() {
		// No comparison starts once ctx is gone; wait for those under way
		// (they end with ctx) without mu, which they take to report.
		l.mu.Lock()
		l.plane.ctx = nil
		l.mu.Unlock()
		l.plane.comparisons.Wait()
		l.mu.Lock() // apply may run a round concurrently
		defer l.mu.Unlock()
		l.stopRetry()
		if l.plane.pace != nil {
			l.plane.pace.Stop()
		}
	}()
	for d.wait(ctx, l.signal, l.settled) {
		l.mu.Lock()
		stale := l.changes.Load() != l.roundStart
		l.mu.Unlock()
		if stale {
			l.sync(ctx)
		}
	}
}

// sync runs one round over the admitter's current state and reports
// whether the live configuration passed.
func (l *live) sync(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roundStart = l.changes.Load()
	// The round's change is its first other than a status update, which
	// waited longer on purpose; a round of status updates only is theirs.
	var changed time.Time
	first, settled := l.firstChange.Swap(0), l.firstSettled.Swap(0)
	if ns := cmp.Or(first, settled); ns != 0 {
		changed = time.Unix(0, ns)
	}
	st := l.admitter.State()
	if st == nil || st.Pipeline == nil {
		return false
	}
	cfg := st.Pipeline.Config
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(l.timeout, liveTimeout))
	defer cancel()

	l.shadow.Busy()
	start := time.Now()
	gens := shadow.Generations(st.Stores)
	d, trace := l.diagnose(ctx, st)
	v := d.First
	// The map-only sample first: LiveRendered may wake the checks, which
	// would otherwise find its queue empty and wait for the next wake.
	l.shadow.AcceptedReusing(st.Pipeline, v, trace, "the live state")
	l.shadow.LiveRendered(st.Pipeline, st.Stores, gens, v.Bundle)
	if parent.Err() != nil {
		// Shutting down: a round cut short says nothing about the
		// configuration, and nothing is published.
		l.log.Info("live round stopped", "reason", context.Cause(parent))
		return false
	}
	took := time.Since(start)
	l.metrics.LiveDuration.Observe(took.Seconds())
	l.reportFailures(ctx, st, d)
	if !v.Passed() {
		reason := l.admitter.Redactor(st).String(v.Reason)
		l.metrics.LiveChecks.WithLabelValues("invalid").Inc()
		l.metrics.LiveValid.Set(0)
		l.log.Error("the live configuration fails its checks; HAProxy keeps the last good configuration",
			"phase", string(v.Phase), "reason", reason)
		if v.TimedOut {
			// A round cut short by its deadline (a loaded machine, a
			// large first render) says nothing about the configuration,
			// and no change may come to start another: retry it, with
			// back-off. Its condition is written with a deadline of its own.
			l.scheduleRetry()
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(parent, objstatus.WriteTimeout)
			defer cancel()
		}
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionValid, Status: metav1.ConditionFalse, Reason: invalidReason(v), Message: reason})
		return false
	}
	l.metrics.LiveChecks.WithLabelValues("valid").Inc()
	l.metrics.LiveValid.Set(1)
	l.log.Info("live configuration checked", "duration", took.Round(time.Millisecond), "warnings", len(v.Warnings))
	l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionValid, Status: metav1.ConditionTrue, Reason: "Checked",
		Message: "the configuration rendered from the current resources passes every check"})
	if l.out != nil && !l.publish(ctx, cfg, v.Bundle, changed) {
		return true
	}
	// The status documents of this render are written once its
	// configuration is accepted: checked and, when publishing, run by
	// HAProxy (or written, with no master socket).
	if l.objStatus != nil {
		l.objStatus.Offer(objstatus.NewBatch(st, v.Bundle.Status))
	}
	return true
}

// redo forgets the last diagnosis and asks for a round: the live state is
// rendered and checked anew (after a shortcut was found wrong, with the
// shortcut off).
func (l *live) redo() {
	l.mu.Lock()
	l.last = nil
	l.mu.Unlock()
	l.trigger()
}

// diagnose finds the failures of the live state: a check, and while it
// fails, more rounds without the objects found broken (dryrun.Diagnose).
// A state that renders the same bundle as the last one diagnosed keeps that
// diagnosis. The diagnosis becomes the baseline admissions are judged
// against. The trace is that of the check of the verdict the diagnosis
// stands on (dryrun.Diagnose): the first one's whenever it passed or
// failed in the tests, the only verdicts the map-only sample takes.
func (l *live) diagnose(ctx context.Context, st *admission.State) (*dryrun.Diagnosis, dryrun.Trace) {
	stores := store.ReadOnly(st.Stores)
	if prev := l.last; prev != nil && prev.pipeline == st.Pipeline && prev.diagnosis.First.BundleHash != "" {
		first, trace := st.Pipeline.CheckWith(ctx, stores, dryrun.CheckOptions{Record: l.record})
		if first.BundleHash == prev.diagnosis.First.BundleHash && !first.TimedOut {
			// The same bundle again: the diagnosis stands, on this
			// round's verdict. It replaces the last one (and, when the
			// state passed, its Passing), so that the earlier round's
			// bundle, and the fragment records its source map holds, are
			// not kept beside this one's.
			d := *prev.diagnosis
			if d.Passing == d.First && first.Passed() {
				d.Passing = first
			}
			d.First = first
			return l.remember(st, &d), trace
		}
		if first.Passed() {
			return l.remember(st, &dryrun.Diagnosis{First: first, Passing: first, Complete: true}), trace
		}
	}
	d, trace := st.Pipeline.Diagnose(ctx, stores, dryrun.DiagnoseOptions{MaxRounds: liveDiagnoseRounds, Record: l.record})
	return l.remember(st, d), trace
}

// liveDiagnoseRounds bounds the checks of one live diagnosis.
const liveDiagnoseRounds = 8

// lastDiagnosis is the live loop's last diagnosis and its pipeline.
type lastDiagnosis struct {
	pipeline  *dryrun.Pipeline
	diagnosis *dryrun.Diagnosis
}

// remember keeps d as the last diagnosis unless it timed out.
func (l *live) remember(st *admission.State, d *dryrun.Diagnosis) *dryrun.Diagnosis {
	if d.First != nil && !d.First.TimedOut {
		l.last = &lastDiagnosis{pipeline: st.Pipeline, diagnosis: d}
	}
	return d
}

// reportFailures makes d the admission baseline and records its failures
// on the config's status and in the htc_live_failures metric.
func (l *live) reportFailures(ctx context.Context, st *admission.State, d *dryrun.Diagnosis) {
	if d.First == nil || d.First.TimedOut {
		return
	}
	l.admitter.SetBaseline(&admission.Baseline{Pipeline: st.Pipeline, Diagnosis: d})
	red := l.admitter.Redactor(st)
	out := make([]config.StatusFailure, 0, len(d.Failures))
	for _, f := range d.Failures {
		sf := config.StatusFailure{Phase: string(f.Phase), Reason: red.String(f.Reason)}
		for _, o := range f.Objects {
			sf.Objects = append(sf.Objects, o.String())
		}
		out = append(out, sf)
	}
	l.status.SetFailures(ctx, st.Pipeline.Config, out)
	l.metrics.LiveFailures.Set(float64(len(out))) // last: the metric says the report is complete
}

// invalidReason is the Valid=False condition reason of a failed verdict,
// by phase.
func invalidReason(v *dryrun.Verdict) string {
	if v.TimedOut {
		return "Timeout"
	}
	switch v.Phase {
	case phase.Render:
		return "RenderFailed"
	case phase.Policy:
		return "PolicyViolation"
	case phase.Syntax:
		return "SyntaxError"
	case phase.Schema:
		return "SchemaError"
	case phase.Semantic:
		return "HAProxyCheckFailed"
	default:
		return "TestsFailed"
	}
}
