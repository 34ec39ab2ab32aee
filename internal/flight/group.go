// Package flight runs one function per key for all concurrent callers, as
// golang.org/x/sync/singleflight does, with one difference that matters for
// work that runs processes: the shared run has a context of its own, which
// is cancelled when the last caller waiting for it gives up. A caller whose
// context ends stops waiting at once; the run goes on while anyone waits.
package flight

import (
	"context"
	"sync"
)

// Group deduplicates concurrent calls by key. The zero Group is ready to
// use; it must not be copied after first use.
type Group[T any] struct {
	mu    sync.Mutex
	calls map[string]*call[T]
}

// call is one run and the callers waiting for it.
type call[T any] struct {
	done    chan struct{}
	val     T
	err     error
	waiters int
	cancel  context.CancelFunc
}

// Do returns the result of fn for key: a run started now, or one already
// under way for the same key (shared is then true). fn gets a context that
// carries ctx's values but is cancelled only when every caller waiting for
// this run has given up. When ctx ends first, Do returns ctx's error.
func (g *Group[T]) Do(ctx context.Context, key string, fn func(context.Context) (T, error)) (val T, shared bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call[T]{}
	}
	c, shared := g.calls[key]
	if shared {
		c.waiters++
	} else {
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call[T]{done: make(chan struct{}), waiters: 1, cancel: cancel}
		g.calls[key] = c
		go g.run(runCtx, key, c, fn)
	}
	g.mu.Unlock()

	select {
	case <-c.done:
		return c.val, shared, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			// Nobody waits: stop the run, and let the next caller start
			// a fresh one rather than join a cancelled run.
			c.cancel()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
		}
		g.mu.Unlock()
		var zero T
		return zero, shared, ctx.Err()
	}
}

// Waiting returns the number of callers waiting for key's run (0 when none
// runs).
func (g *Group[T]) Waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.calls[key]; ok {
		return c.waiters
	}
	return 0
}

// run runs fn and publishes its result to the waiting callers.
func (g *Group[T]) run(ctx context.Context, key string, c *call[T], fn func(context.Context) (T, error)) {
	defer c.cancel()
	c.val, c.err = fn(ctx)
	g.mu.Lock()
	if g.calls[key] == c {
		delete(g.calls, key)
	}
	g.mu.Unlock()
	close(c.done)
}
