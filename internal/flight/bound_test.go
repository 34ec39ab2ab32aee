package flight

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blocking is a run that starts (started closed), then answers "done"
// when released, or its context's error when that ends first.
func blocking() (fn func(context.Context) (string, error), started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	fn = func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return fn, started, release
}

// A caller whose deadline comes before the run's bound leaves at it with
// its context's error; the run goes on and answers the caller still
// waiting.
func TestACallerWhoseContextEndsEarlyGetsItsErrorWhileTheRunCompletesForTheOthers(t *testing.T) {
	g := Group[string]{StartersDeadline: true}
	fn, started, release := blocking()
	starter, cancelStarter := context.WithTimeout(context.Background(), time.Hour)
	defer cancelStarter()
	first := make(chan string, 1)
	go func() { v, _, _ := g.Do(starter, "k", fn); first <- v }()
	<-started

	early, cancel := context.WithDeadline(context.Background(), time.Now()) // over already
	defer cancel()
	_, shared, err := g.Do(early, "k", fn)

	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, shared, "it joined the run under way")
	assert.Equal(t, 1, g.Waiting("k"), "the run goes on for the first caller")
	close(release)
	assert.Equal(t, "done", <-first)
}

// The run is nobody's: with StartersDeadline its context ends at the
// deadline its starter had; without it the run has no deadline, whatever
// its starter's.
func TestTheRunCarriesItsOwnBoundNotItsStartersContext(t *testing.T) {
	deadline := func(ctx context.Context) (time.Time, error) { d, _ := ctx.Deadline(); return d, nil }
	starter, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	want, _ := starter.Deadline()

	bounded := Group[time.Time]{StartersDeadline: true}
	got, _, err := bounded.Do(starter, "k", deadline)
	require.NoError(t, err)
	assert.True(t, got.Equal(want), "the run's deadline is its starter's: %s", got)

	var unbounded Group[time.Time]
	got, _, err = unbounded.Do(starter, "k", deadline)
	require.NoError(t, err)
	assert.True(t, got.IsZero(), "no bound, no deadline: %s", got)
}

// A caller whose deadline is the run's bound waits for the run's own
// answer, which the bound brings, instead of its bare context error: the
// request that starts a shared admission gets the check's "timed out
// during ..." (here the deadline and the bound are over before the run
// even starts).
func TestACallerWhoseDeadlineIsTheBoundWaitsForTheRunsOwnAnswer(t *testing.T) {
	g := Group[string]{StartersDeadline: true}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	ended, release := make(chan struct{}), make(chan struct{})
	answer := make(chan string, 1)
	go func() {
		v, _, err := g.Do(ctx, "k", func(runCtx context.Context) (string, error) {
			<-runCtx.Done()
			close(ended)
			<-release
			return "timed out during the check", nil
		})
		if err != nil {
			v = err.Error()
		}
		answer <- v
	}()
	<-ended
	close(release)
	assert.Equal(t, "timed out during the check", <-answer)
}

// A cancellation ends a caller's wait at once, whatever its deadline: a
// client that went away is not kept waiting for the run's answer.
func TestACancelledCallerLeavesAtOnceWhateverItsDeadline(t *testing.T) {
	g := Group[string]{StartersDeadline: true}
	fn, started, release := blocking()
	defer close(release)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	errs := make(chan error, 1)
	go func() { _, _, err := g.Do(ctx, "k", fn); errs <- err }()
	<-started
	cancel()
	assert.ErrorIs(t, <-errs, context.Canceled)
}
