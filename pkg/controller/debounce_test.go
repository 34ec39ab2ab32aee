package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

// TestDebouncer drives the debouncer with a fake clock: each step either
// signals a change (or an update of a status only: settled) or advances
// the clock, and the test checks whether the round is due after it.
func TestDebouncer(t *testing.T) {
	const quiet, maxDelay = 100 * time.Millisecond, time.Second
	type step struct {
		signal  bool
		settled bool
		advance time.Duration
		due     bool // the round returned after this step
	}
	for name, steps := range map[string][]step{
		"one change is due after the quiet period": {
			{signal: true},
			{advance: 99 * time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"changes within the quiet period extend it": {
			{signal: true},
			{advance: 80 * time.Millisecond},
			{signal: true},
			{advance: 80 * time.Millisecond},
			{signal: true},
			{advance: 99 * time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"a steady stream is cut off at the maximum delay": {
			{signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 90 * time.Millisecond}, {signal: true},
			{advance: 10 * time.Millisecond, due: true}, // 1 s after the first change
		},
		"a status update alone waits the status quiet period": {
			{settled: true},
			{advance: StatusDebounce - time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"status updates within the status quiet period extend it": {
			{settled: true},
			{advance: 200 * time.Millisecond},
			{settled: true},
			{advance: StatusDebounce - time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"another change after a status update is rendered with it after the quiet period": {
			{settled: true},
			{advance: 50 * time.Millisecond},
			{signal: true},
			{advance: 99 * time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"a status update does not lengthen another change's quiet period": {
			{signal: true},
			{advance: 50 * time.Millisecond},
			{settled: true},
			{advance: 99 * time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
		"status updates are cut off at the maximum delay": {
			{settled: true},
			{advance: 200 * time.Millisecond}, {settled: true},
			{advance: 200 * time.Millisecond}, {settled: true},
			{advance: 200 * time.Millisecond}, {settled: true},
			{advance: 200 * time.Millisecond}, {settled: true},
			{advance: 199 * time.Millisecond},
			{advance: time.Millisecond, due: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(0, 0))
			d := newDebouncer(clk, quiet, maxDelay)
			absorbed := make(chan struct{}, 1)
			d.absorbed = func() { absorbed <- struct{}{} }
			changed, settled := make(chan struct{}, 1), make(chan struct{}, 1)
			done := make(chan bool, 1)
			go func() { done <- d.wait(t.Context(), changed, settled) }()
			for i, s := range steps {
				if s.signal || s.settled {
					if s.signal {
						changed <- struct{}{}
					} else {
						settled <- struct{}{}
					}
					select {
					case <-absorbed:
					case <-time.After(5 * time.Second):
						t.Fatalf("step %d: the signal was not taken", i)
					}
				}
				if s.advance > 0 {
					clk.Step(s.advance)
				}
				if s.due {
					select {
					case ok := <-done:
						assert.True(t, ok, "step %d", i)
					case <-time.After(5 * time.Second):
						t.Fatalf("step %d: the round is not due", i)
					}
					return
				}
				// Not due: wait returns only on a timer, and none has fired.
				assert.Empty(t, done, "step %d: the round returned early", i)
			}
			t.Fatal("the steps never made the round due")
		})
	}
}

func TestDebouncerStopsWithContext(t *testing.T) {
	d := newDebouncer(testingclock.NewFakeClock(time.Unix(0, 0)), 0, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.False(t, d.wait(ctx, make(chan struct{}), make(chan struct{})), "no change, cancelled: not due")

	ctx, cancel = context.WithCancel(t.Context())
	changed := make(chan struct{}, 1)
	changed <- struct{}{}
	done := make(chan bool, 1)
	go func() { done <- d.wait(ctx, changed, nil) }()
	require.Eventually(t, func() bool { return len(changed) == 0 }, 5*time.Second, time.Millisecond)
	cancel()
	assert.False(t, <-done, "cancelled during the quiet period: not due")
	assert.Equal(t, DefaultDebounce, d.quiet, "zero means the default")
	assert.Equal(t, DefaultDebounce, d.maxDelay, "the maximum delay is never shorter than the quiet period")
}

// TestDebouncerDefersRoundsWhileAdmissionsAreChecked: a round that is due
// while busy says admissions are being checked waits another quiet period
// each time, and runs once they are done, or at the maximum delay when
// they never are.
func TestDebouncerDefersRoundsWhileAdmissionsAreChecked(t *testing.T) {
	const quiet, maxDelay = 100 * time.Millisecond, time.Second
	for name, tc := range map[string]struct {
		idleAfter int // quiet periods busy; -1: always
		dueAfter  time.Duration
	}{
		"a round waits until the admissions are done":      {idleAfter: 3, dueAfter: 3 * quiet},
		"a round waits no longer than the maximum delay":   {idleAfter: -1, dueAfter: maxDelay},
		"a round is not deferred when nothing is admitted": {idleAfter: 0, dueAfter: quiet},
	} {
		t.Run(name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(0, 0))
			d := newDebouncer(clk, quiet, maxDelay)
			var busy atomic.Bool
			busy.Store(tc.idleAfter != 0)
			absorbed, deferred := make(chan struct{}, 1), make(chan struct{}, 1)
			d.absorbed = func() { absorbed <- struct{}{} }
			d.deferred = func() { deferred <- struct{}{} }
			d.busy = busy.Load
			changed := make(chan struct{}, 1)
			done := make(chan bool, 1)
			go func() { done <- d.wait(t.Context(), changed, nil) }()
			changed <- struct{}{}
			<-absorbed
			periods := 0
			for elapsed := time.Duration(0); elapsed < tc.dueAfter; elapsed += quiet {
				assert.Empty(t, done, "the round returned after %s", elapsed)
				if periods > 0 {
					select {
					case <-deferred:
					case <-time.After(5 * time.Second):
						t.Fatalf("after %s: the round was neither due nor deferred", elapsed)
					}
				}
				periods++
				if periods == tc.idleAfter {
					busy.Store(false)
				}
				clk.Step(quiet)
			}
			select {
			case ok := <-done:
				assert.True(t, ok)
			case <-time.After(5 * time.Second):
				t.Fatalf("the round is not due after %s", tc.dueAfter)
			}
		})
	}
}
