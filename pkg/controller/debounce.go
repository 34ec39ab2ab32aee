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
	// StatusDebounce is the quiet period after an update that changed only
	// an object's status (settled, below) when no other change came with
	// it: most are the status writes of controllers reacting to the last
	// round, htc's own among them (an HTTPRoute's status.parents, which the
	// Gateway library reads to keep other controllers' entries), and a
	// round started for one at once ran beside the next change's admission
	// and held off its round (BENCHMARKS.md, "Route propagation by the
	// probe method"). Any other change cuts it to the debounce and is
	// rendered with it in one round.
	StatusDebounce = 250 * time.Millisecond
)

// debouncer turns a stream of change signals into render rounds: wait
// returns after a signal once the signals paused for quiet and nothing more
// urgent runs (busy is false), or once maxDelay passed since the first
// signal of the round, whichever comes first. A round whose signals all
// came on settled (updates of an object's status only) waits for
// settledQuiet instead of quiet: the wait only changes when the round
// starts, never what it renders.
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
	// settledQuiet is the quiet period of a round whose signals all came
	// on settled (StatusDebounce; never more than maxDelay).
	settledQuiet time.Duration
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
	return &debouncer{clock: clk, quiet: quiet, maxDelay: maxDelay, settledQuiet: min(max(StatusDebounce, quiet), maxDelay)}
}

// wait blocks until a round is due (true) or ctx ends (false). Signals on
// changed and settled that arrive during the round are absorbed into it;
// while only settled signalled, the quiet period is settledQuiet.
func (d *debouncer) wait(ctx context.Context, changed, settled <-chan struct{}) bool {
	period := d.quiet
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-settled:
		period = d.settledQuiet
	}
	deadline := d.clock.After(d.maxDelay)
	quiet := d.clock.NewTimer(period)
	defer quiet.Stop()
	restart := func() {
		if !quiet.Stop() {
			// The timer fired concurrently; its value is still waiting
			// (the channel has a buffer of one): drain it so Reset starts clean.
			select {
			case <-quiet.C():
			default:
			}
		}
		quiet.Reset(period)
		d.signalAbsorbed()
	}
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
			quiet.Reset(period) // fired and drained: Reset starts clean
			d.signalDeferred()
		case <-changed:
			period = d.quiet
			restart()
		case <-settled:
			restart()
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
