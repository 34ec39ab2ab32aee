package testrun

import (
	"context"

	"github.com/haproxy-template/htc/internal/flight"
	"k8s.io/utils/lru"
)

// Cache remembers complete test reports by config hash: the tests depend
// only on the config (their fixtures stand in for the stores), so the
// admission of an Ingress does not rerun them. Concurrent runs for the same
// hash share one run. A run cut short (a test timed out or never ran) is
// not cached. It is safe for concurrent use.
type Cache struct {
	reports *lru.Cache
	flight  flight.Group[*Report]
	// Store, when set, keeps complete reports beyond this process too
	// (e.g. DirStore, for htc check and htc validate).
	Store Store
}

// NewCache returns a cache holding the reports of at most size configs
// (least recently used evicted).
func NewCache(size int) *Cache {
	return &Cache{reports: lru.New(max(size, 1))}
}

// NewCacheWithStore returns NewCache(size) keeping reports in s as well.
func NewCacheWithStore(size int, s Store) *Cache {
	c := NewCache(size)
	c.Store = s
	return c
}

// Run returns the cached report for hash, or runs r's tests (all of them,
// opts.Only is ignored) and caches the report when every test finished.
// cached reports whether the report came from the cache.
//
// The run itself is shared by every caller asking for the same hash at the
// same time, under the rule for shared runs (package admission's doc,
// flight.Group.Do): it is bound to no caller's context, its own bound is
// the test timeout (opts.Timeout, which Runner.Run applies itself) and it
// stops when the last caller gives up. Each caller waits under its own deadline (when that comes first,
// err is ctx's error); a run that completed is cached for the next.
func (c *Cache) Run(ctx context.Context, hash string, r *Runner, opts Options) (report *Report, cached bool, err error) {
	if v, ok := c.reports.Get(hash); ok {
		return v.(*Report), true, nil
	}
	if c.Store != nil {
		if r, ok := c.Store.Load(hash); ok {
			c.reports.Add(hash, r)
			return r, true, nil
		}
	}
	opts.Only = nil
	rep, _, err := c.flight.Do(ctx, hash, func(runCtx context.Context) (*Report, error) {
		rep, err := r.Run(runCtx, opts)
		if err == nil && rep.complete() {
			c.reports.Add(hash, rep)
			if c.Store != nil {
				c.Store.Save(hash, rep)
			}
		}
		return rep, err
	})
	if err != nil {
		return nil, false, err
	}
	return rep, false, nil
}

// Cached reports whether a complete report for hash is cached (in memory
// or in the Store): Run would answer it without running anything.
func (c *Cache) Cached(hash string) bool {
	if _, ok := c.reports.Get(hash); ok {
		return true
	}
	if c.Store != nil {
		if r, ok := c.Store.Load(hash); ok {
			c.reports.Add(hash, r)
			return true
		}
	}
	return false
}

// Waiting returns the number of callers waiting for hash's run (0 when
// none runs).
func (c *Cache) Waiting(hash string) int { return c.flight.Waiting(hash) }

// complete reports whether every test of the report finished.
func (r *Report) complete() bool {
	for _, res := range r.Results {
		if res.Status == StatusTimedOut || res.Status == StatusNotRun {
			return false
		}
	}
	return true
}
