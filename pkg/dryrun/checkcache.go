package dryrun

import (
	"context"
	"errors"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/flight"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
)

// defaultCheckCacheEntries bounds a pipeline's cache of check results.
const defaultCheckCacheEntries = 64

// checkCache remembers the outcome of checking a bundle by its hash:
// equal bundles (a label-only change, an admission of what is already
// live, the same proposal sent again) are checked once. Concurrent checks
// of equal bundles share one run. Outcomes that say nothing about the
// bundle (a deadline, a cancellation, a checker that could not run) are
// not kept.
type checkCache struct {
	results *lru.Cache
	flight  flight.Group[checkOutcome]
}

// checkOutcome is a cached check result.
type checkOutcome struct {
	res *haproxy.Result
	err error
}

func newCheckCache(size int) *checkCache {
	if size <= 0 {
		size = defaultCheckCacheEntries
	}
	return &checkCache{results: lru.New(size)}
}

// check returns the outcome of checking b with c, from the cache or shared
// with a concurrent check of an equal bundle, under the rule for shared
// runs (package admission's doc, flight.Group.Do): the run is bound to no
// caller's context; its own bound is the checker's (one haproxy -c run:
// haproxy.Options.Timeout, which the checker applies itself); it stops
// (haproxy's process group killed) when the last caller gives up; each
// caller waits under its own deadline. Unless
// reused is set, a cached outcome whose haproxy -c run was reused from
// another bundle (the map-only shortcut, now off) is checked again.
func (cc *checkCache) check(ctx context.Context, run checkFunc, b *bundle.Bundle, hash string, reused bool) (*haproxy.Result, bool, error) {
	if v, ok := cc.results.Get(hash); ok {
		if o := v.(checkOutcome); reused || o.res == nil || !o.res.SemanticReused {
			return o.res, true, o.err
		}
	}
	o, _, err := cc.flight.Do(ctx, hash, func(runCtx context.Context) (checkOutcome, error) {
		res, err := run(runCtx, b)
		if definite(err) {
			cc.results.Add(hash, checkOutcome{res: res, err: err})
		}
		return checkOutcome{res: res, err: err}, nil
	})
	if err != nil {
		return &haproxy.Result{}, false, &phase.Error{Phase: phase.Semantic, Reason: "check canceled", Err: err}
	}
	return o.res, false, o.err
}

// checkFunc is Checker.Check or Checker.CheckStatic.
type checkFunc func(context.Context, *bundle.Bundle) (*haproxy.Result, error)

// definite reports whether a check's error (or success) is a statement
// about the bundle worth remembering.
func definite(err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	_, ok := phase.Of(err)
	return ok
}
