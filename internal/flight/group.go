// Package flight runs one function per key for all concurrent callers, as
// golang.org/x/sync/singleflight does, under htc's one rule for shared runs
// (written down in package admission's doc): the run is nobody's, it
// carries a bound of its own, it ends when the last caller waiting for it
// has left, and each caller waits under its own deadline. Every shared run
// on the admission path goes through Do: the admission's repeated
// decisions, the check cache and the embedded tests' cache. This package
// is the one place a shared run's deadline is reasoned about: its users
// pass their context and nothing else.
package flight

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Group deduplicates concurrent calls by key. The zero Group is ready to
// use; it must not be copied after first use.
type Group[T any] struct {
	// StartersDeadline bounds each run by the deadline of the caller that
	// starts it (a shared admission decision: the request that starts it
	// gets the decision's own answer at its deadline). Unset, a run has no
	// bound but its own: fn bounds itself (a check, by haproxy's timeout;
	// the embedded tests, by the test timeout).
	StartersDeadline bool

	mu    sync.Mutex
	calls map[string]*call[T]
}

// call is one run and the callers waiting for it.
type call[T any] struct {
	done    chan struct{}
	val     T
	err     error
	waiters int
	bound   time.Time
	cancel  context.CancelFunc
}

// Do returns the result of fn for key: a run started now, or one already
// under way for the same key (shared is then true).
//
// fn runs under a context of its own: it carries ctx's values but neither
// its cancellation nor its deadline; it ends at its bound (with
// StartersDeadline, the deadline the starting caller's ctx had when the
// run started; else none, fn bounds itself) and when every caller waiting
// for the run has left.
//
// Each caller waits under its own ctx: when ctx is cancelled, or its
// deadline comes before the run's bound, Do returns ctx's error at once
// and the run goes on for the others. A caller whose deadline is the
// run's bound or later waits for the run's own answer, which fn gives at
// its bound at the latest (fn must honour its context).
func (g *Group[T]) Do(ctx context.Context, key string, fn func(context.Context) (T, error)) (val T, shared bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call[T]{}
	}
	c, shared := g.calls[key]
	if shared {
		c.waiters++
	} else {
		var bound time.Time
		if g.StartersDeadline {
			bound, _ = ctx.Deadline()
		}
		runCtx, cancel := runContext(ctx, bound)
		c = &call[T]{done: make(chan struct{}), waiters: 1, bound: bound, cancel: cancel}
		g.calls[key] = c
		go g.run(runCtx, key, c, fn)
	}
	g.mu.Unlock()

	wait, stop := waitContext(ctx, c.bound)
	defer stop()
	select {
	case <-c.done:
		return c.val, shared, c.err
	case <-wait.Done():
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

// runContext is the context of a run that a caller with ctx starts: ctx's
// values, none of its cancellation or deadline, ending at bound (zero:
// only when cancelled).
func runContext(ctx context.Context, bound time.Time) (context.Context, context.CancelFunc) {
	nobodys := context.WithoutCancel(ctx)
	if bound.IsZero() {
		return context.WithCancel(nobodys)
	}
	return context.WithDeadline(nobodys, bound)
}

// waitContext is what a caller with ctx waits under for a run that ends
// at bound: ctx itself, unless ctx's deadline is bound or later. Then the
// run answers first, and only a cancellation of ctx (the client gone)
// ends the wait early.
func waitContext(ctx context.Context, bound time.Time) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok || bound.IsZero() || deadline.Before(bound) {
		return ctx, func() {}
	}
	wait, stop := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			stop()
		}
	})
	return wait, func() { unhook(); stop() }
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
