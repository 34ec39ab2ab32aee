package informer

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/watched"
)

// servicesBy are n watched resources of Services, each with a label
// selector of its own (app=0, app=1, ...): n watch keys.
func servicesBy(t *testing.T, n int) []watched.Resource {
	t.Helper()
	spec := &config.HAProxyTemplateConfigSpec{WatchedResources: map[string]config.WatchedResource{}}
	for i := range n {
		spec.WatchedResources["s"+strconv.Itoa(i)] = config.WatchedResource{APIVersion: "v1", Resources: "services",
			IndexBy: []string{"metadata.namespace", "metadata.name"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": strconv.Itoa(i)}}}
	}
	model, err := watched.New(spec)
	require.NoError(t, err)
	out := make([]watched.Resource, n)
	for i := range n {
		out[i], _ = model.Get("s" + strconv.Itoa(i))
	}
	return out
}

// startCounting is a StartFunc over dyn that counts the watchers it starts.
func startCounting(dyn dynamic.Interface, starts *atomic.Int32) StartFunc {
	return func(ctx context.Context, r watched.Resource, keep *watched.Keep, changed func()) (*Watcher, error) {
		starts.Add(1)
		return Start(ctx, dyn, r, nil, keep, Updates{Changed: changed}, slog.New(slog.DiscardHandler))
	}
}

// A prepared watcher serves every admission that needs what it keeps,
// is replaced by one keeping more, and is handed over, once, to the
// config loop, whose live loop its changes then trigger.
func TestAPreparedWatcherIsSharedReplacedAndTaken(t *testing.T) {
	dyn := fakeClient(svc("a", "s1", "1"))
	rs := servicesBy(t, 1)
	var starts, triggers atomic.Int32
	ps := NewPrepared(startCounting(dyn, &starts), func() { triggers.Add(1) }, slog.New(slog.DiscardHandler))
	_, err := ps.Store(t.Context(), rs[0], nil)
	assert.ErrorIs(t, err, errNotRunning, "no config loop runs them yet")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ps.Run(ctx)
	defer ps.StopAll()
	ports := watched.NewKeep([][]string{{"spec", "ports"}}, nil)
	st, err := ps.Store(ctx, rs[0], ports)
	require.NoError(t, err)
	again, err := ps.Store(ctx, rs[0], ports)
	require.NoError(t, err)
	assert.Same(t, st, again, "the second admission uses the first one's store")
	assert.Equal(t, int32(1), starts.Load())

	whole, err := ps.Store(ctx, rs[0], nil)
	require.NoError(t, err)
	assert.NotSame(t, st, whole, "one keeping whole objects replaces it")
	assert.Equal(t, int32(2), starts.Load())

	assert.Nil(t, ps.Take(watched.WatchKey{}, nil), "no watcher of another key")
	w := ps.Take(rs[0].WatchKey(), ports)
	require.NotNil(t, w, "whole objects keep what the config reads")
	defer w.Stop()
	assert.Same(t, whole, w.Store())
	assert.Zero(t, ps.Len())
	assert.Nil(t, ps.Take(rs[0].WatchKey(), ports), "taken once")

	_, err = dyn.Resource(servicesGVR).Namespace("a").Create(ctx, svc("a", "s2", "2"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return triggers.Load() > 0 }, 5*time.Second, 10*time.Millisecond,
		"an adopted watcher's changes trigger the live loop")
}

// At most preparedMax watchers run: a new one stops the least recently
// used.
func TestPreparedWatchersStopTheLeastRecentlyUsed(t *testing.T) {
	rs := servicesBy(t, preparedMax+1)
	var starts atomic.Int32
	ps := NewPrepared(startCounting(fakeClient(), &starts), func() {}, slog.New(slog.DiscardHandler))
	ps.Run(t.Context())
	defer ps.StopAll()
	for _, r := range rs[:preparedMax] {
		_, err := ps.Store(t.Context(), r, nil)
		require.NoError(t, err)
	}
	_, err := ps.Store(t.Context(), rs[0], nil) // used again: rs[1] is the least recently used
	require.NoError(t, err)
	_, err = ps.Store(t.Context(), rs[preparedMax], nil)
	require.NoError(t, err)
	assert.Equal(t, preparedMax, ps.Len())
	assert.Nil(t, ps.Take(rs[1].WatchKey(), nil), "the least recently used was stopped")
	for _, r := range []watched.Resource{rs[0], rs[2], rs[preparedMax]} {
		w := ps.Take(r.WatchKey(), nil)
		if assert.NotNil(t, w, r.Key) {
			w.Stop()
		}
	}
	assert.Equal(t, int32(preparedMax+1), starts.Load())
}

// At an idle memory return (StopListed) the prepared watchers that listed
// stop, and the next admission of their config lists again; one still
// listing (an admission that ran out of time waits for it) goes on.
func TestPreparedWatchersThatListedStopAtAnIdleReturn(t *testing.T) {
	rs := servicesBy(t, 3)
	var starts atomic.Int32
	listing := &Watcher{synced: func() bool { return false }, cancel: func() {}, done: make(chan struct{}), sink: &Sink{}}
	close(listing.done)
	start := startCounting(fakeClient(svc("a", "s1", "1")), &starts)
	ps := NewPrepared(func(ctx context.Context, r watched.Resource, keep *watched.Keep, changed func()) (*Watcher, error) {
		if r.Key == rs[2].Key {
			return listing, nil
		}
		return start(ctx, r, keep, changed)
	}, func() {}, slog.New(slog.DiscardHandler))
	ps.Run(t.Context())
	defer ps.StopAll()
	for _, r := range rs[:2] {
		_, err := ps.Store(t.Context(), r, nil)
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := ps.Store(short, rs[2], nil)
	require.ErrorIs(t, err, admission.ErrStillListing)
	require.Equal(t, 3, ps.Len())

	assert.Equal(t, 2, ps.StopListed(), "the two that listed")
	assert.Equal(t, 1, ps.Len(), "the one listing goes on")
	assert.Nil(t, ps.Take(rs[0].WatchKey(), nil), "stopped, not adopted")
	assert.Same(t, listing, ps.Take(rs[2].WatchKey(), nil))
	_, err = ps.Store(t.Context(), rs[0], nil)
	require.NoError(t, err)
	assert.Equal(t, int32(3), starts.Load(), "the next admission listed again")
	assert.Equal(t, 1, ps.StopListed(), "the one started again")
}

// keptTimer is an expiry that keeps its function after Stop, as a stopped
// Go timer may until the time it was set for.
type keptTimer struct{ f func() }

func (*keptTimer) Stop() bool               { return true }
func (*keptTimer) Reset(time.Duration) bool { return true }

// TestAStoppedPreparedWatchersStoreIsGarbageThoughItsTimerIsKept: once
// StopListed stopped a prepared watcher, its store is garbage at once,
// even while its expiry timer, stopped, still holds the function it was
// given (Go keeps a stopped timer in its heap of timers until the time it
// was set for or until enough others were stopped: before, the store
// stayed 5 minutes after the last admission used it).
func TestAStoppedPreparedWatchersStoreIsGarbageThoughItsTimerIsKept(t *testing.T) {
	rs := servicesBy(t, 2)
	var starts atomic.Int32
	service := svc("a", "s1", "1")
	service.SetLabels(map[string]string{"app": "0"})
	ps := NewPrepared(startCounting(fakeClient(service), &starts), func() {}, slog.New(slog.DiscardHandler))
	var timers []*keptTimer
	ps.afterFunc = func(_ time.Duration, f func()) expiry {
		k := &keptTimer{f: f}
		timers = append(timers, k)
		return k
	}
	ps.Run(t.Context())
	defer ps.StopAll()
	s, err := ps.Store(t.Context(), rs[0], nil)
	require.NoError(t, err)
	require.Equal(t, 1, s.Len())
	stored := weak.Make(s)
	s = nil
	require.Equal(t, 1, ps.StopListed())
	runtime.GC()
	runtime.GC()
	assert.Nil(t, stored.Value(), "the stopped watcher's store was collected")
	require.Len(t, timers, 1)
	timers[0].f() // its time comes: nothing to drop
	assert.Zero(t, ps.Len())

	_, err = ps.Store(t.Context(), rs[1], nil)
	require.NoError(t, err)
	require.Len(t, timers, 2)
	require.Equal(t, 1, ps.Len())
	runtime.GC()
	timers[1].f() // the time of one still prepared comes: it stops
	assert.Zero(t, ps.Len(), "an unused watcher stops at its time")
	runtime.KeepAlive(timers)
}
