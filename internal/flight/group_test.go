package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConcurrentCallsShareOneRun(t *testing.T) {
	var g Group[int]
	var runs atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	fn := func(context.Context) (int, error) {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-release
		return 42, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 3)
	shared := make([]bool, 3)
	wg.Add(1)
	go func() { defer wg.Done(); results[0], shared[0], _ = g.Do(context.Background(), "k", fn) }()
	<-started
	for i := 1; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], shared[i], _ = g.Do(context.Background(), "k", fn) }()
	}
	// The joiners are counted before the run may finish.
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.calls["k"].waiters == 3 }, testWait, pollEvery)
	close(release)
	wg.Wait()
	assert.Equal(t, []int{42, 42, 42}, results)
	assert.Equal(t, []bool{false, true, true}, shared)
	assert.Equal(t, int64(1), runs.Load())

	// A later call runs again.
	release = make(chan struct{})
	close(release)
	v, sh, err := g.Do(context.Background(), "k", fn)
	require.NoError(t, err)
	assert.Equal(t, 42, v)
	assert.False(t, sh)
	assert.Equal(t, int64(2), runs.Load())
}

// The run is cancelled when the last waiter gives up, not before.
func TestRunCancelledWhenEveryCallerGaveUp(t *testing.T) {
	var g Group[int]
	started, stopped := make(chan struct{}), make(chan error, 1)
	fn := func(ctx context.Context) (int, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return 0, ctx.Err()
	}
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, _, err := g.Do(first, "k", fn); errs <- err }()
	<-started
	go func() { _, _, err := g.Do(second, "k", fn); errs <- err }()
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.calls["k"].waiters == 2 }, testWait, pollEvery)

	cancelFirst()
	assert.ErrorIs(t, <-errs, context.Canceled)
	select {
	case <-stopped:
		t.Fatal("the run stopped while a caller still waited")
	default:
	}
	cancelSecond()
	assert.ErrorIs(t, <-errs, context.Canceled)
	assert.True(t, errors.Is(<-stopped, context.Canceled), "the run's context ends with the last waiter")
}

// The run's context carries the first caller's values.
func TestRunKeepsValues(t *testing.T) {
	type key struct{}
	var g Group[string]
	ctx := context.WithValue(context.Background(), key{}, "v")
	got, _, err := g.Do(ctx, "k", func(ctx context.Context) (string, error) { return ctx.Value(key{}).(string), nil })
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

// A caller arriving after every other gave up starts a fresh run instead
// of joining the cancelled one.
func TestNoJoiningACancelledRun(t *testing.T) {
	var g Group[string]
	started, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, _, err := g.Do(ctx, "k", func(runCtx context.Context) (string, error) {
			close(started)
			<-release
			return "stale", runCtx.Err()
		})
		gaveUp <- err
	}()
	<-started
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	v, shared, err := g.Do(context.Background(), "k", func(context.Context) (string, error) { return "fresh", nil })
	require.NoError(t, err)
	assert.False(t, shared)
	assert.Equal(t, "fresh", v)
	close(release)
}
