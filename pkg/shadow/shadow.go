package shadow

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// Defaults of Options.
const (
	// DefaultEvery is Options.Every's default: a check at least every 100
	// live renders.
	DefaultEvery = 100
	// DefaultTimeout bounds one check (a full render, or haproxy -c, or
	// two full renders).
	DefaultTimeout = time.Minute
	// admissionSamples, mapOnlySamples and readSetSamples bound the
	// samples kept of each kind: a map-only sample holds a whole bundle,
	// an admission sample the proposed objects.
	admissionSamples, mapOnlySamples, readSetSamples = 4, 2, 8
)

// Results of htc_shortcut_checks_total.
const (
	ResultAgreed    = "agreed"    // the shortcut gave the full computation's answer
	ResultMismatch  = "mismatch"  // it did not: the shortcut is now off
	ResultStale     = "stale"     // the state moved on: nothing to compare
	ResultCancelled = "cancelled" // work arrived: the sample waits
	ResultError     = "error"     // timed out, or the checker could not run
)

// Options configure a Verifier.
type Options struct {
	// Switches are turned off on a mismatch; the process's one Switches.
	// Required.
	Switches *shortcut.Switches
	// State returns the admission state in use (read-set checks render
	// over its stores). Required.
	State func() *admission.State
	// CheckUnreused runs every check phase of p's config on b, haproxy -c
	// included, reusing no earlier run (haproxy.Checker.Unreused); nil:
	// map-only samples are not kept.
	CheckUnreused func(ctx context.Context, p *dryrun.Pipeline, b *bundle.Bundle) error
	// Reread reads a live object whole from the API server, for the
	// prune checks (run when idle); nil: no prune checks.
	Reread Reread
	// Every: a check runs at least every Every live renders (the newest
	// sample then); zero never triggers one by count. Negative means
	// DefaultEvery.
	Every int
	// OnIdle makes Idle trigger checks.
	OnIdle bool
	// Timeout bounds one check; zero means DefaultTimeout.
	Timeout time.Duration
	// Report, when set, is told the outcome of every check that agreed or
	// mismatched, from Run's goroutine and with Run's context (after the
	// shortcut was turned off, for a mismatch).
	Report func(context.Context, Outcome)
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Log receives a line per mismatch (and a debug line per check); nil
	// discards.
	Log *slog.Logger
}

// Outcome is what one check found.
type Outcome struct {
	// Shortcut is the shortcut checked.
	Shortcut shortcut.Kind
	// Agreed reports that it gave the full computation's answer.
	Agreed bool
	// Where names the output, line and object involved in a mismatch
	// (never their content): "haproxy.cfg line 12 (Ingress default/web)".
	Where string
}

// Verifier runs the shadow checks. Make one with New, run it with Run.
// Its offering and triggering methods never block, may be called from any
// goroutine, and do nothing on a nil *Verifier.
type Verifier struct {
	opts    Options
	metrics *metrics
	log     *slog.Logger

	wake chan struct{} // capacity 1: checks are wanted
	live atomic.Pointer[liveSample]
	// published is the newest live render (published when its check
	// passes; the prune checks compare with it); idle asks for a prune
	// check (Idle), of each published render once
	// (liveSample.pruneChecked); pruneRound picks each check's objects.
	published  atomic.Pointer[liveSample]
	idle       atomic.Bool
	pruneRound atomic.Uint64
	admitted   chan *admissionSample
	mapOnly    chan *mapOnlySample
	readSet    chan *readSetSample
	renders    atomic.Uint64 // live renders seen
	// cancel cancels the check in progress (nil: none).
	cancel atomic.Pointer[context.CancelFunc]
}

// New returns a Verifier with its metrics registered.
func New(opts Options) *Verifier {
	if opts.Every < 0 {
		opts.Every = DefaultEvery
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{opts: opts, log: log, metrics: newMetrics(opts.Registerer),
		wake: make(chan struct{}, 1), admitted: make(chan *admissionSample, admissionSamples),
		mapOnly: make(chan *mapOnlySample, mapOnlySamples), readSet: make(chan *readSetSample, readSetSamples)}
	for _, k := range shortcut.Kinds {
		v.metrics.setEnabled(k, opts.Switches.On(k))
	}
	return v
}

// Idle is called when the controller has been idle for a while: pending
// samples are checked (with Options.OnIdle). It reports whether any was
// pending (checks, full renders, start now; false also without OnIdle).
func (v *Verifier) Idle() bool {
	if v == nil || !v.opts.OnIdle {
		return false
	}
	pending := v.pending()
	v.idle.Store(true)
	v.trigger()
	return pending
}

// pending reports whether checkPending, run now while idle, would check
// something: a live sample, the published render's prune check, or a
// queued sample.
func (v *Verifier) pending() bool {
	if v.live.Load() != nil || len(v.admitted)+len(v.mapOnly)+len(v.readSet) > 0 {
		return true
	}
	s := v.published.Load()
	return s != nil && v.pruneChecked() && !s.pruneChecked.Load()
}

// Busy is called when work arrives (an admission, a live round): the check
// in progress, if any, is cancelled, and its sample waits.
func (v *Verifier) Busy() {
	if v == nil {
		return
	}
	if c := v.cancel.Load(); c != nil {
		(*c)()
	}
}

// Run checks pending samples whenever it is triggered, until ctx ends.
func (v *Verifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.wake:
		}
		v.checkPending(ctx)
	}
}

// trigger asks Run for a round of checks.
func (v *Verifier) trigger() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// checkPending checks the newest live sample, then (when idle, once for
// each) the pruning of the published one, then the queued admission, map-only and
// read-set samples, one at a time, until one is cancelled.
func (v *Verifier) checkPending(ctx context.Context) {
	if s := v.live.Swap(nil); s != nil {
		if !v.run(ctx, shortcut.Render, "the live state", func(ctx context.Context) (string, string) { return v.checkRender(ctx, s) }) {
			v.live.CompareAndSwap(nil, s) // unless a newer one came
			return
		}
	}
	if s := v.published.Load(); s != nil && v.pruneChecked() && v.idle.Swap(false) && !s.pruneChecked.Load() {
		if !v.run(ctx, shortcut.Prune, "the live state", func(ctx context.Context) (string, string) { return v.checkPrune(ctx, s) }) {
			v.idle.Store(true) // the next occasion checks it
			return
		}
		s.pruneChecked.Store(true)
	}
	for {
		select {
		case s := <-v.admitted:
			if !v.run(ctx, s.kind, s.what, func(ctx context.Context) (string, string) { return v.checkAdmission(ctx, s) }) {
				offer(v.admitted, s)
				return
			}
			continue
		case s := <-v.mapOnly:
			if !v.run(ctx, shortcut.MapOnly, s.what, func(ctx context.Context) (string, string) { return v.checkMapOnly(ctx, s) }) {
				offer(v.mapOnly, s)
				return
			}
			continue
		case s := <-v.readSet:
			if !v.run(ctx, shortcut.ReadSet, s.what, func(ctx context.Context) (string, string) { return v.checkReadSet(ctx, s) }) {
				offer(v.readSet, s)
				return
			}
			continue
		default:
		}
		return
	}
}

// run runs one check of shortcut k (of what: "the live state", "the
// admission of Ingress default/web") under its own deadline, cancellable
// by Busy, counts and reports its result, and turns k off on a mismatch.
// It returns false when the check was cancelled (the caller keeps the
// sample). A check of a shortcut already off is skipped.
func (v *Verifier) run(ctx context.Context, k shortcut.Kind, what string, check func(context.Context) (result, where string)) bool {
	if !v.opts.Switches.On(k) {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	v.cancel.Store(&cancel)
	result, where := check(cctx)
	v.cancel.Store(nil)
	cancel()
	if result == ResultError && ctx.Err() != nil {
		result = ResultCancelled // stopping
	}
	v.metrics.checks.WithLabelValues(string(k), result).Inc()
	switch result {
	case ResultCancelled:
		return ctx.Err() != nil // stopping: nothing waits
	case ResultAgreed:
		v.log.Debug("a shortcut agreed with the full computation", "shortcut", string(k), "checked", what)
		v.report(ctx, Outcome{Shortcut: k, Agreed: true})
	case ResultMismatch:
		v.opts.Switches.TurnOff(k)
		v.metrics.setEnabled(k, false)
		v.metrics.mismatches.WithLabelValues(string(k)).Inc()
		v.log.Error("a shortcut gave another answer than the full computation; it is off until the controller restarts",
			"shortcut", string(k), "where", where)
		v.report(ctx, Outcome{Shortcut: k, Where: where})
	}
	return true
}

func (v *Verifier) report(ctx context.Context, o Outcome) {
	if v.opts.Report != nil {
		v.opts.Report(ctx, o)
	}
}

// offer queues s unless q is full; it reports whether it did.
func offer[T any](q chan T, s T) bool {
	select {
	case q <- s:
		return true
	default:
		return false
	}
}

// metrics are the Verifier's metrics.
type metrics struct {
	checks, mismatches *prometheus.CounterVec
	enabled            *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_shortcut_checks_total",
			Help: "Run-time checks of a shortcut against the full computation (render: incremental render; map-only: a haproxy -c run reused for a map-only change; read-set: a change admitted without rendering; prune: the stores' pruned objects, against objects read whole from the API server; carry: a proposed config's render with the live render's fragment records), by result: agreed, mismatch, stale, cancelled, error.",
		}, []string{"shortcut", "result"}),
		mismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_shortcut_mismatch_total",
			Help: "Run-time checks that found a shortcut giving another answer than the full computation; the shortcut is then off until the controller restarts.",
		}, []string{"shortcut"}),
		enabled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "htc_shortcut_enabled",
			Help: "1 while the shortcut is taken, 0 once it is off (a mismatch, or --full-render for render and carry).",
		}, []string{"shortcut"}),
	}
	for _, k := range shortcut.Kinds {
		m.mismatches.WithLabelValues(string(k))
		for _, r := range []string{ResultAgreed, ResultMismatch} {
			m.checks.WithLabelValues(string(k), r)
		}
	}
	if reg != nil {
		reg.MustRegister(m.checks, m.mismatches, m.enabled)
	}
	return m
}

func (m *metrics) setEnabled(k shortcut.Kind, on bool) {
	g := m.enabled.WithLabelValues(string(k))
	if on {
		g.Set(1)
	} else {
		g.Set(0)
	}
}
