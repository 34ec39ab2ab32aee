package admission

import (
	"context"
	"time"
)

// The admission asks the caller's deadline one question, whether it
// leaves time for some work (see the package doc's Deadlines): these two
// functions are the only ones in the package that read it. A check slot's
// wait asks both (busy, or wait until the check would no longer fit); the
// confirming diagnosis asks timeFor. A shared decision's bound is the
// flight's (flight.Group.StartersDeadline), not read here.

// timeFor reports whether ctx leaves more than d before its deadline
// (always, without one).
func timeFor(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

// leaving returns ctx ending d before its deadline (ctx itself without
// one): a wait under it ends while d is still left for the work after it.
func leaving(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline.Add(-d))
}
