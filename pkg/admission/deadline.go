package admission

import (
	"context"
	"time"
)

// timeFor is the one question the Admitter asks the request's deadline
// (see the package doc's Deadlines), and the only code in the package
// that reads it: does ctx leave more than d before its deadline (always,
// without one)? It also returns ctx ending d before its deadline (ctx
// itself without one), so that a wait under it ends while d is still left
// for the work after it; cancel releases it. It is asked before a check
// slot's wait (slots.acquire: busy, or wait while a check still fits) and
// before the confirming diagnosis (confirm: time for two more rounds). A
// shared decision's bound is the flight's (flight.Group.StartersDeadline),
// not read here.
func timeFor(ctx context.Context, d time.Duration) (wait context.Context, cancel context.CancelFunc, ok bool) {
	deadline, has := ctx.Deadline()
	switch {
	case !has:
		return ctx, func() {}, true
	case time.Until(deadline) <= d:
		return ctx, func() {}, false
	}
	wait, cancel = context.WithDeadline(ctx, deadline.Add(-d))
	return wait, cancel, true
}
