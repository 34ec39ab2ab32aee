package admission

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlotsTurnAwayWhatCannotFinish(t *testing.T) {
	var s slots
	s.init(1)
	s.observe(changeCheck, time.Hour) // one check takes an hour
	release, ok := s.acquire(context.Background(), 1, changeCheck)
	require.True(t, ok, "a free slot is taken at once")

	// Every slot is busy and no deadline leaves time for a check: turned
	// away at once, without waiting.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ok = s.acquire(ctx, 1, changeCheck)
	assert.False(t, ok)

	// Without a deadline it waits for the slot.
	got := make(chan bool)
	go func() {
		r, ok := s.acquire(context.Background(), 1, changeCheck)
		if ok {
			r()
		}
		got <- ok
	}()
	release()
	assert.True(t, <-got)
}

func TestSlotsWaitWhileTimeRemains(t *testing.T) {
	var s slots
	s.init(1)
	s.observe(changeCheck, time.Millisecond)
	release, ok := s.acquire(context.Background(), 1, changeCheck)
	require.True(t, ok)
	got := make(chan bool)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		r, ok := s.acquire(ctx, 1, changeCheck)
		if ok {
			r()
		}
		got <- ok
	}()
	release()
	assert.True(t, <-got, "a queued request with time left gets the slot")
}

func TestSlotsEstimate(t *testing.T) {
	var s slots
	s.observe(changeCheck, 100*time.Millisecond)
	assert.Equal(t, int64(100*time.Millisecond), s.estimates[changeCheck].Load(), "the first observation is the estimate")
	s.observe(changeCheck, 500*time.Millisecond)
	assert.Equal(t, int64(200*time.Millisecond), s.estimates[changeCheck].Load(), "then a moving average")
}

func TestBusyDecision(t *testing.T) {
	a := &Admitter{MaxInFlight: 1}
	a.slots.init(1)
	a.slots.observe(changeCheck, time.Hour)
	hold, ok := a.slots.acquire(context.Background(), a.MaxInFlight, changeCheck)
	require.True(t, ok)
	defer hold()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ok = a.slots.acquire(ctx, a.MaxInFlight, changeCheck)
	assert.False(t, ok)
	d, r := busy()
	assert.False(t, d.Allowed)
	assert.True(t, r.Busy)
	assert.Equal(t, ReasonBusy, d.Reason)
}

// Unsized slots are as many as the CPUs the process may use (GOMAXPROCS,
// which follows the container's CPU limit), not the node's.
func TestSlotsDefaultToGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var s slots
	s.init(0)
	assert.Equal(t, 1, cap(s.sem))
}

// TestInFlightCountsTheChecksHoldingASlot: the live loop defers its rounds
// while it is above zero, so it must fall back to zero when they end.
func TestInFlightCountsTheChecksHoldingASlot(t *testing.T) {
	var a Admitter
	assert.Equal(t, 0, a.InFlight(), "before any check")
	r1, ok := a.slots.acquire(context.Background(), 2, changeCheck)
	require.True(t, ok)
	r2, ok := a.slots.acquire(context.Background(), 2, changeCheck)
	require.True(t, ok)
	assert.Equal(t, 2, a.InFlight())
	r1()
	assert.Equal(t, 1, a.InFlight())
	r2()
	assert.Equal(t, 0, a.InFlight(), "every check released its slot")
}

// TestSlowConfigChecksDoNotTurnChangesAway: proposed configs whose checks
// take an hour share the slots but not the estimate of a change's check,
// so a change that finds every slot taken waits for one while its
// deadline leaves time for a change's check; a config is turned away.
func TestSlowConfigChecksDoNotTurnChangesAway(t *testing.T) {
	var s slots
	s.init(1)
	s.observe(configCheck, time.Hour)
	s.observe(changeCheck, time.Millisecond)
	release, ok := s.acquire(context.Background(), 1, configCheck)
	require.True(t, ok)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ok = s.acquire(ctx, 1, configCheck)
	assert.False(t, ok, "a config is estimated to take an hour: busy")

	got := make(chan bool)
	go func() {
		r, ok := s.acquire(ctx, 1, changeCheck)
		if ok {
			r()
		}
		got <- ok
	}()
	release()
	assert.True(t, <-got, "a change is estimated by changes: it waits for the slot")
	assert.Less(t, s.estimates[changeCheck].Load(), int64(time.Second), "a config's check does not move a change's estimate")
}
