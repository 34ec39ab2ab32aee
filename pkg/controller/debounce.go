package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of Options.Debounce and Options.MaxDelay.
const (
	// DefaultDebounce is the quiet period after a change before the live
	// configuration is rendered: a burst of changes closer together than
	// this is rendered once. It was 100 ms while every change reloaded
	// HAProxy; with the runtime API most rounds do not, and reloads are
	// paced on their own (DefaultReloadInterval), so it is short: measured
	// at 1,000 Ingresses (BENCHMARKS.md, "The data plane"), an endpoint
	// turning ready was served 191 ms after the change (p50) with 20 ms,
	// 277 ms with 100 ms, for more, smaller rounds during a storm of
	// changes (its CPU per change up by half).
	DefaultDebounce = 20 * time.Millisecond
	// DefaultMaxDelay bounds how long a steady stream of changes can hold
	// off rendering: the first change of a burst is rendered at most this
	// long after it arrived (plus the render, check and apply or reload
	// time).
	DefaultMaxDelay = time.Second
)

// debouncer turns a stream of change signals into render rounds: wait
// returns after a signal once the signals paused for quiet and nothing more
// urgent runs (busy is false), or once maxDelay passed since the first
// signal of the round, whichever comes first.
//
// busy yields the CPU to admissions: a live round (a full render, haproxy
// -c, an apply or reload) started while an admission is being checked
// competes with it for the same cores, and on a small machine at scale
// that pushed admissions past their deadline (valid writes refused as
// timed out). While busy says so, a due round waits another quiet period,
// absorbing the changes that arrive meanwhile (the admitted object itself,
// the status writes of the last round), so one round follows the
// admissions instead of one racing each; maxDelay still bounds the wait.
type debouncer struct {
	clock    clock.Clock
	quiet    time.Duration
	maxDelay time.Duration
	// busy, when set, tells whether rounds should wait (admissions are
	// being checked); nil: never.
	busy func() bool
	// absorbed, when set, is called after each signal is taken into the
	// round's timers (tests step a fake clock only after it).
	absorbed func()
	// deferred, when set, is called each time a due round waits because
	// busy said so (a metric counts them; tests step the clock after it).
	deferred func()
}

func newDebouncer(clk clock.Clock, quiet, maxDelay time.Duration) *debouncer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if quiet <= 0 {
		quiet = DefaultDebounce
	}
	if maxDelay < quiet {
		maxDelay = quiet
	}
	return &debouncer{clock: clk, quiet: quiet, maxDelay: maxDelay}
}

// wait blocks until a round is due (true) or ctx ends (false). Signals on
// changed that arrive during the round are absorbed into it.
func (d *debouncer) wait(ctx context.Context, changed <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	}
	deadline := d.clock.After(d.maxDelay)
	quiet := d.clock.NewTimer(d.quiet)
	defer quiet.Stop()
	d.signalAbsorbed()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return true
		case <-quiet.C():
			if d.busy == nil || !d.busy() {
				return true
			}
			quiet.Reset(d.quiet) // fired and drained: Reset starts clean
			d.signalDeferred()
		case <-changed:
			if !quiet.Stop() {
				// The timer fired concurrently; its value is still waiting
				// (the channel has a buffer of one): drain it so Reset starts clean.
				select {
				case <-quiet.C():
				default:
				}
			}
			quiet.Reset(d.quiet)
			d.signalAbsorbed()
		}
	}
}

func (d *debouncer) signalDeferred() {
	if d.deferred != nil {
		d.deferred()
	}
}

func (d *debouncer) signalAbsorbed() {
	if d.absorbed != nil {
		d.absorbed()
	}
}
