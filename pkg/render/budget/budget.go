package budget

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/render/funcs"
)

// DefaultMaxBytes is the cap on the size of a rendered bundle when
// Input.MaxBytes is zero: 64 MiB over haproxy.cfg, every map, file and
// certificate, and the files addFile adds.
const DefaultMaxBytes = 64 << 20

// ScratchFactor sets the scratch budget of a render (see LimitError) to
// this many times its bundle limit.
const ScratchFactor = 4

// LimitError reports that a render stopped because it would exceed a size
// limit: the bundle limit (Input.MaxBytes) on everything rendered and on
// any one value a function builds, or the scratch budget (ScratchFactor
// times that limit) on all the values the templates build while rendering
// (strings made by printf, include, repeat, join, ..., list elements and
// map entries), which keeps a template from exhausting the controller's
// memory before its output grows.
type LimitError struct {
	// Func is the template function that would exceed the limit; empty when
	// it is the output itself.
	Func string
	// Scratch reports that the scratch budget, not the bundle limit, was
	// exceeded.
	Scratch bool
	// Value reports that one value Func would build is larger than the
	// bundle limit (it could never be part of the bundle).
	Value bool
	// Limit is the limit in bytes.
	Limit int64
}

// Error names the limit.
func (e *LimitError) Error() string {
	size := formatBytes(e.Limit)
	switch {
	case e.Value:
		return fmt.Sprintf("%s: the value would be larger than the bundle size limit of %s", e.Func, size)
	case e.Scratch && e.Func != "":
		return fmt.Sprintf("%s: the values this render builds would exceed %s (%d times the bundle size limit)", e.Func, size, ScratchFactor)
	case e.Scratch:
		return fmt.Sprintf("the values this render builds would exceed %s (%d times the bundle size limit)", size, ScratchFactor)
	case e.Func != "":
		return fmt.Sprintf("%s: the rendered bundle would exceed its size limit of %s", e.Func, size)
	default:
		return fmt.Sprintf("the rendered bundle would exceed its size limit of %s", size)
	}
}

// formatBytes renders n as "64 MiB" when it is a whole number of MiB or KiB,
// else as "N bytes".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// Budget is what one render may still produce, and whether its context has
// ended. done is a fresh flag per render, set by context.AfterFunc, so a
// late callback of an earlier render never stops a later one; reading it is
// one atomic load. The zero Budget is disarmed: it charges nothing and is
// never interrupted (outside a render: Context, tests of helpers). It is
// the funcs.Meter its render's guarded functions charge.
type Budget struct {
	ctx     context.Context
	done    *atomic.Bool
	stop    func() bool
	limit   int64 // bundle limit
	bundle  int64 // bytes of the bundle still allowed
	scratch int64 // bytes of built values still allowed
}

// Start arms the budget for a render under ctx with the given bundle limit
// (DefaultMaxBytes when zero or negative).
func (b *Budget) Start(ctx context.Context, limit int64) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	done := new(atomic.Bool)
	b.ctx, b.done, b.limit, b.bundle = ctx, done, limit, limit
	b.scratch = funcs.SatMul(limit, ScratchFactor)
	if ctx.Done() != nil { // a context that can end
		b.stop = context.AfterFunc(ctx, func() { done.Store(true) })
	}
}

// End disarms the budget after a render.
func (b *Budget) End() {
	if b.stop != nil {
		b.stop()
	}
	*b = Budget{}
}

// Limit is the bundle limit of the render (0 when disarmed).
func (b *Budget) Limit() int64 { return b.limit }

// Scratch is what is left of the scratch budget (negative once exceeded).
func (b *Budget) Scratch() int64 { return b.scratch }

// Interrupted returns the context's error once the render's context has
// ended, else nil. It is cheap enough for every function call and write.
func (b *Budget) Interrupted() error {
	if b.done != nil && b.done.Load() {
		return b.ctxErr()
	}
	return nil
}

// ctxErr is the error of an ended context (context.Canceled if the flag was
// seen before the context reports its error).
func (b *Budget) ctxErr() error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// Charge counts n bytes of a value fn builds against the scratch budget;
// one value may not be larger than the bundle limit.
func (b *Budget) Charge(fn string, n int64) error {
	if err := b.Interrupted(); err != nil {
		return err
	}
	if b.done == nil { // outside a render (Context, tests of helpers)
		return nil
	}
	if n > b.limit {
		return &LimitError{Func: fn, Value: true, Limit: b.limit}
	}
	if n > b.scratch || n < 0 {
		b.scratch = -1
		return &LimitError{Func: fn, Scratch: true, Limit: funcs.SatMul(b.limit, ScratchFactor)}
	}
	b.scratch -= n
	return nil
}

// Spend counts n bytes against the scratch budget that fn charged, value by
// value, when it ran before (a reused fragment record): the total, so no
// one value is checked against the bundle limit.
func (b *Budget) Spend(fn string, n int64) error {
	if err := b.Interrupted(); err != nil {
		return err
	}
	if n > b.scratch {
		b.scratch = -1
		return &LimitError{Func: fn, Scratch: true, Limit: funcs.SatMul(b.limit, ScratchFactor)}
	}
	b.scratch -= n
	return nil
}

// ChargeBundle counts n bytes of bundle content (from fn, "" for template
// output) against the bundle limit.
func (b *Budget) ChargeBundle(fn string, n int64) error {
	if err := b.Interrupted(); err != nil {
		return err
	}
	if b.done == nil {
		return nil
	}
	if n > b.bundle {
		b.bundle = -1
		return &LimitError{Func: fn, Limit: b.limit}
	}
	b.bundle -= n
	return nil
}

// Fits refuses a result that could be n bytes long when n exceeds the
// bundle limit or the scratch budget left, without charging it.
func (b *Budget) Fits(fn string, n int64) error {
	if err := b.Interrupted(); err != nil {
		return err
	}
	if b.done != nil && n > b.limit {
		return &LimitError{Func: fn, Value: true, Limit: b.limit}
	}
	if b.done != nil && n > b.scratch {
		return &LimitError{Func: fn, Scratch: true, Limit: funcs.SatMul(b.limit, ScratchFactor)}
	}
	return nil
}

// A Budget is what a render's guarded functions charge.
var _ funcs.Meter = (*Budget)(nil)
