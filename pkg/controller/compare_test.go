package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dataplane"
)

// TestARoundGoesOnWhileWhatHAProxyRunsIsReadBack: the comparison a round
// starts (every round, here) reads HAProxy's state without holding the
// round lock: held there, the next round is applied meanwhile; the
// comparison it made stale is counted stale, neither agreed nor a
// mismatch (no condition, no reload), and stays due: the next idle moment
// compares again and agrees.
func TestARoundGoesOnWhileWhatHAProxyRunsIsReadBack(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	ctx := t.Context()
	e := echoes(t, "alpha", "beta")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"])))
	f.start(t)

	started, release := make(chan struct{}), make(chan struct{})
	held := true
	f.live.mu.Lock()
	p := &f.live.plane
	p.checkEvery, p.ctx = 1, ctx
	p.compare = func(ctx context.Context, b *bundle.Bundle) ([]dataplane.Mismatch, error) {
		if held {
			held = false
			close(started)
			<-release
		}
		s, err := f.master.OpenWorker(ctx)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return dataplane.Verify(ctx, s, b)
	}
	f.live.mu.Unlock()
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a failed assertion must not leave the comparison held
		}
	}()

	// round runs a round; one that waits for the held comparison fails
	// the test (after a bound, rather than hanging it).
	round := func() bool {
		done := make(chan bool, 1)
		go func() { done <- f.live.sync(ctx) }()
		select {
		case ok := <-done:
			return ok
		case <-time.After(time.Minute):
			close(release)
			<-done
			t.Fatal("the round waited for the comparison of what HAProxy runs")
			return false
		}
	}
	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
	require.True(t, round())
	<-started
	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"], "host", "other.example")))
	require.True(t, round(), "the round is applied while the comparison is held")
	require.Equal(t, 2.0, testutil.ToFloat64(f.metrics.ReloadsAvoided))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeApplies.WithLabelValues(dataplane.KindMap, "applied")))

	close(release)
	p.comparisons.Wait()
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeChecks.WithLabelValues("stale")))
	for _, result := range []string{"agreed", "mismatch", "error"} {
		assert.Zero(t, testutil.ToFloat64(f.metrics.RuntimeChecks.WithLabelValues(result)), result)
	}
	assert.Zero(t, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadMismatch)))
	assert.Nil(t, f.status(ConditionRuntimeVerified), "a stale comparison reports nothing")

	f.live.idle() // still due
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeChecks.WithLabelValues("agreed")))
	v := f.status(ConditionRuntimeVerified)
	require.NotNil(t, v)
	assert.Equal(t, metav1.ConditionTrue, v.Status)
	f.inSync(t)
}

// compareNow compares what HAProxy runs with the files and reports it, as
// the live loop does after its rounds.
func compareNow(ctx context.Context, l *live, cfg *config.HAProxyTemplateConfig) {
	l.mu.Lock()
	c := l.beginComparison(ctx, cfg, "test")
	l.mu.Unlock()
	if c != nil {
		l.compareAndReport(c)
	}
}
