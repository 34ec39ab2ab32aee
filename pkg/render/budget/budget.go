package render

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/render/funcs"
)

// DefaultMaxBytes is the cap on the size of a rendered bundle when
// Input.MaxBytes is zero: 64 MiB over haproxy.cfg, every map, file and
// certificate, and the files addFile adds.
const DefaultMaxBytes = 64 << 20

// scratchFactor sets the scratch budget of a render (see LimitError) to this
// many times its bundle limit.
const scratchFactor = 4

// LimitError reports that a render stopped because it would exceed a size
// limit: the bundle limit (Input.MaxBytes) on everything rendered and on
// any one value a function builds, or the scratch budget (scratchFactor
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
		return fmt.Sprintf("%s: the values this render builds would exceed %s (%d times the bundle size limit)", e.Func, size, scratchFactor)
	case e.Scratch:
		return fmt.Sprintf("the values this render builds would exceed %s (%d times the bundle size limit)", size, scratchFactor)
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

// budget is what one render may still produce, and whether its context has
// ended. done is a fresh flag per render, set by context.AfterFunc, so a
// late callback of an earlier render never stops a later one; reading it is
// one atomic load.
type budget struct {
	ctx     context.Context
	done    *atomic.Bool
	stop    func() bool
	limit   int64 // bundle limit
	bundle  int64 // bytes of the bundle still allowed
	scratch int64 // bytes of built values still allowed
}

// start arms the budget for a render under ctx with the given bundle limit
// (DefaultMaxBytes when zero or negative).
func (b *budget) start(ctx context.Context, limit int64) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	done := new(atomic.Bool)
	b.ctx, b.done, b.limit, b.bundle = ctx, done, limit, limit
	b.scratch = funcs.SatMul(limit, scratchFactor)
	if ctx.Done() != nil { // a context that can end
		b.stop = context.AfterFunc(ctx, func() { done.Store(true) })
	}
}

// end disarms the budget after a render.
func (b *budget) end() {
	if b.stop != nil {
		b.stop()
	}
	*b = budget{}
}

// interrupted returns the context's error once the render's context has
// ended, else nil. It is cheap enough for every function call and write.
func (b *budget) interrupted() error {
	if b.done != nil && b.done.Load() {
		return b.ctxErr()
	}
	return nil
}

// ctxErr is the error of an ended context (context.Canceled if the flag was
// seen before the context reports its error).
func (b *budget) ctxErr() error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// charge counts n bytes of a value fn builds against the scratch budget;
// one value may not be larger than the bundle limit.
func (b *budget) charge(fn string, n int64) error {
	if err := b.interrupted(); err != nil {
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
		return &LimitError{Func: fn, Scratch: true, Limit: funcs.SatMul(b.limit, scratchFactor)}
	}
	b.scratch -= n
	return nil
}

// chargeBundle counts n bytes of bundle content (from fn, "" for template
// output) against the bundle limit.
func (b *budget) chargeBundle(fn string, n int64) error {
	if err := b.interrupted(); err != nil {
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

// Interrupted, Charge and Fits make the budget the funcs.Meter its
// render's guarded functions charge.

// Interrupted is interrupted.
func (b *budget) Interrupted() error { return b.interrupted() }

// Charge is charge.
func (b *budget) Charge(fn string, n int64) error { return b.charge(fn, n) }

// Fits refuses a result that could be n bytes long when n exceeds the
// bundle limit or the scratch budget left, without charging it.
func (b *budget) Fits(fn string, n int64) error {
	if err := b.interrupted(); err != nil {
		return err
	}
	if b.done != nil && n > b.limit {
		return &LimitError{Func: fn, Value: true, Limit: b.limit}
	}
	if b.done != nil && n > b.scratch {
		return &LimitError{Func: fn, Scratch: true, Limit: funcs.SatMul(b.limit, scratchFactor)}
	}
	return nil
}

// boundedWriter is the writer every template of a render writes to. Each
// Write first checks the render's done flag, so a template stops as soon as
// it produces output after its context ended (text/template aborts on a
// write error), then charges the bytes: to the bundle limit for an output,
// to the scratch budget for the text include captures.
type boundedWriter struct {
	bytes.Buffer
	b       *budget
	scratch bool     // include's capture, not bundle output
	t       *tracker // the render's source map (nil: none)
}

// Write appends p unless the render was interrupted or p exceeds the budget.
func (w *boundedWriter) Write(p []byte) (int, error) {
	if err := w.admit(len(p), true); err != nil || len(p) == 0 {
		return 0, err
	}
	return w.Buffer.Write(p)
}

// WriteString is Write of a string (the Buffer's own would skip the
// budget and the source map).
func (w *boundedWriter) WriteString(s string) (int, error) {
	if err := w.admit(len(s), true); err != nil || len(s) == 0 {
		return 0, err
	}
	return w.Buffer.WriteString(s)
}

// writeUntracked is WriteString without telling the tracker, which is
// told of the write otherwise (a fragment's record).
func (w *boundedWriter) writeUntracked(s string) error {
	if err := w.admit(len(s), false); err != nil || len(s) == 0 {
		return err
	}
	_, err := w.Buffer.WriteString(s)
	return err
}

// admit checks the done flag, charges n bytes about to be written and,
// with track, tells the tracker of the write.
func (w *boundedWriter) admit(n int, track bool) error {
	if err := w.b.interrupted(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	var err error
	if w.scratch {
		err = w.b.charge("include", int64(n))
	} else {
		err = w.b.chargeBundle("", int64(n))
	}
	if err != nil {
		return err
	}
	if track && w.t != nil && !w.scratch {
		w.t.wrote(w.Len())
	}
	return nil
}
