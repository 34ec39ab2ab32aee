package testrun_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/render"
)

// gatedRenderer counts renders and holds each until gate is closed.
type gatedRenderer struct {
	testrun.Renderer
	renders atomic.Int64
	started chan struct{} // receives once per render
	gate    chan struct{}
}

func (g *gatedRenderer) Render(ctx context.Context, in render.Input) (*bundle.Bundle, error) {
	g.renders.Add(1)
	g.started <- struct{}{}
	<-g.gate
	return g.Renderer.Render(ctx, in)
}

const oneTest = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
  haproxyConfig: {template: "global\n  maxconn 10\n"}
  validationTests:
    only: {assertions: [{type: contains, pattern: maxconn}]}
`

func TestCacheSharesOneRunAndCachesIt(t *testing.T) {
	g := &gatedRenderer{started: make(chan struct{}, 8), gate: make(chan struct{})}
	r := runnerWith(t, oneTest, func(e testrun.Renderer) testrun.Renderer { g.Renderer = e; return g })
	c := testrun.NewCache(4)

	var wg sync.WaitGroup
	results := make([]*testrun.Report, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, cached, err := c.Run(context.Background(), "h1", r, testrun.Options{Workers: 1})
			assert.NoError(t, err)
			assert.False(t, cached)
			results[i] = rep
		}()
	}
	<-g.started // the shared run is rendering
	// Every caller waits for it: a caller that came after it finished would
	// (rightly) be answered from the cache.
	assert.Eventually(t, func() bool { return c.Waiting("h1") == len(results) }, 10*time.Second, time.Millisecond,
		"three callers wait for the shared run")
	close(g.gate)
	wg.Wait()
	assert.Equal(t, int64(1), g.renders.Load(), "three concurrent callers, one run")
	for _, rep := range results {
		require.NotNil(t, rep)
		assert.True(t, rep.OK())
	}
	rep, cached, err := c.Run(context.Background(), "h1", r, testrun.Options{})
	require.NoError(t, err)
	assert.True(t, cached)
	assert.True(t, rep.OK())
	assert.Equal(t, int64(1), g.renders.Load())
}

// A caller whose context ends stops waiting; the shared run goes on while
// another caller waits, and its report is cached.
func TestCacheCallerGivesUp(t *testing.T) {
	g := &gatedRenderer{started: make(chan struct{}, 8), gate: make(chan struct{})}
	r := runnerWith(t, oneTest, func(e testrun.Renderer) testrun.Renderer { g.Renderer = e; return g })
	c := testrun.NewCache(4)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, _, err := c.Run(ctx, "h2", r, testrun.Options{})
		gaveUp <- err
	}()
	<-g.started
	stays := make(chan *testrun.Report, 1)
	go func() {
		rep, _, err := c.Run(context.Background(), "h2", r, testrun.Options{})
		assert.NoError(t, err)
		stays <- rep
	}()
	require.Eventually(t, func() bool { return c.Waiting("h2") == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-gaveUp, context.Canceled)
	close(g.gate)
	rep := <-stays
	require.NotNil(t, rep)
	assert.True(t, rep.OK())
	_, cached, err := c.Run(context.Background(), "h2", r, testrun.Options{})
	require.NoError(t, err)
	assert.True(t, cached)
	assert.Equal(t, int64(1), g.renders.Load(), "one run for all three")
}

// When every caller gave up, the run stops: nothing runs on for nobody,
// and nothing incomplete is cached.
func TestCacheRunStopsWhenNobodyWaits(t *testing.T) {
	g := &gatedRenderer{started: make(chan struct{}, 8), gate: make(chan struct{})}
	r := runnerWith(t, oneTest, func(e testrun.Renderer) testrun.Renderer { g.Renderer = e; return g })
	c := testrun.NewCache(4)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, _, err := c.Run(ctx, "h4", r, testrun.Options{})
		gaveUp <- err
	}()
	<-g.started
	cancel()
	assert.ErrorIs(t, <-gaveUp, context.Canceled)
	close(g.gate) // the render returns into a cancelled run
	require.Eventually(t, func() bool { return c.Waiting("h4") == 0 }, 10*time.Second, time.Millisecond)
	rep, cached, err := c.Run(context.Background(), "h4", r, testrun.Options{})
	require.NoError(t, err)
	assert.False(t, cached, "the stopped run was not cached")
	assert.True(t, rep.OK())
}

// An incomplete run (deadline) is not cached.
func TestCacheSkipsIncompleteRuns(t *testing.T) {
	r := runnerFor(t, oneTest)
	c := testrun.NewCache(4)
	rep, _, err := c.Run(context.Background(), "h3", r, testrun.Options{Timeout: 1})
	require.NoError(t, err)
	require.False(t, rep.OK())
	rep, cached, err := c.Run(context.Background(), "h3", r, testrun.Options{})
	require.NoError(t, err)
	assert.False(t, cached, "a timed-out run was not cached")
	assert.True(t, rep.OK())
}

// A DirStore keeps complete reports across caches (processes); the salt
// separates what else they depend on.
func TestCacheStore(t *testing.T) {
	dir := t.TempDir()
	g := &gatedRenderer{started: make(chan struct{}, 8), gate: make(chan struct{})}
	close(g.gate)
	r := runnerWith(t, oneTest, func(e testrun.Renderer) testrun.Renderer { g.Renderer = e; return g })
	first := testrun.NewCache(4)
	first.Store = testrun.DirStore{Dir: dir, Salt: "htc v1 haproxy 3.0"}
	rep, cached, err := first.Run(context.Background(), "h", r, testrun.Options{})
	require.NoError(t, err)
	require.False(t, cached)
	require.True(t, rep.OK())

	second := testrun.NewCache(4)
	second.Store = testrun.DirStore{Dir: dir, Salt: "htc v1 haproxy 3.0"}
	again, cached, err := second.Run(context.Background(), "h", r, testrun.Options{})
	require.NoError(t, err)
	assert.True(t, cached, "a new process finds the report on disk")
	assert.Equal(t, rep.Total, again.Total)
	assert.Equal(t, int64(1), g.renders.Load())

	other := testrun.NewCache(4)
	other.Store = testrun.DirStore{Dir: dir, Salt: "htc v2 haproxy 3.0"}
	_, cached, err = other.Run(context.Background(), "h", r, testrun.Options{})
	require.NoError(t, err)
	assert.False(t, cached, "another htc build or haproxy runs the tests again")

	// A corrupt file is a miss, not an error.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), []byte("{not json"), 0o600))
	}
	_, cached, err = testrun.NewCacheWithStore(4, testrun.DirStore{Dir: dir, Salt: "htc v1 haproxy 3.0"}).Run(context.Background(), "h", r, testrun.Options{})
	require.NoError(t, err)
	assert.False(t, cached)
}
