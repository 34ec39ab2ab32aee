package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timeFor answers whether the deadline leaves more than d, and its wait
// ends d before the deadline (never, without one).
func TestTimeForAnswersWhetherTheDeadlineLeavesTimeForTheWork(t *testing.T) {
	far, cancelFar := context.WithTimeout(context.Background(), time.Hour)
	defer cancelFar()
	near, cancelNear := context.WithTimeout(context.Background(), time.Minute)
	defer cancelNear()
	deadline, _ := far.Deadline()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		d        time.Duration
		ok       bool
		waitEnds time.Time // zero: the wait has no deadline
	}{
		{name: "no deadline leaves time for anything", ctx: context.Background(), d: 24 * time.Hour, ok: true},
		{name: "a deadline an hour away leaves a minute", ctx: far, d: time.Minute, ok: true, waitEnds: deadline.Add(-time.Minute)},
		{name: "a deadline a minute away leaves no hour", ctx: near, d: time.Hour, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, cancel, ok := timeFor(tc.ctx, tc.d)
			defer cancel()
			assert.Equal(t, tc.ok, ok)
			got, has := wait.Deadline()
			if tc.waitEnds.IsZero() {
				if ok {
					assert.False(t, has, "without a deadline, the wait has none")
				}
				return
			}
			require.True(t, has)
			assert.Equal(t, tc.waitEnds, got)
		})
	}
}

// A request waiting for a check slot stops waiting, busy, while its
// deadline still leaves the time one check takes: not at the deadline,
// when the API server has given up on it.
func TestSlotsStopWaitingWhileACheckStillFits(t *testing.T) {
	var s slots
	s.init(1)
	s.observe(changeCheck, time.Minute) // one check takes a minute
	release, ok := s.acquire(context.Background(), 1, changeCheck)
	require.True(t, ok)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+50*time.Millisecond)
	defer cancel()
	_, ok = s.acquire(ctx, 1, changeCheck)
	assert.False(t, ok, "busy: no slot came free")
	assert.NoError(t, ctx.Err(), "the wait ended a check's time before the deadline")
}
