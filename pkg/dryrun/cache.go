package dryrun

import (
	"context"
	"sync"
)

// TestCache remembers embedded test reports by config hash: the tests depend
// only on the config (their fixtures stand in for the stores), so an
// admission of an Ingress does not rerun them. Only complete runs are cached;
// a run cut short by a deadline is not.
type TestCache struct {
	mu      sync.Mutex
	limit   int
	order   []string
	reports map[string]*TestReport
}

// NewTestCache returns a cache holding at most limit reports (oldest evicted).
func NewTestCache(limit int) *TestCache {
	return &TestCache{limit: max(limit, 1), reports: map[string]*TestReport{}}
}

// Run returns the cached report for p's config, or runs the tests and caches
// the report when every test finished (passed or failed, not timed out).
func (c *TestCache) Run(ctx context.Context, p *Pipeline, opts TestOptions) (report *TestReport, cached bool, err error) {
	if r := c.get(p.Hash); r != nil {
		return r, true, nil
	}
	report, err = p.Tests.Run(ctx, opts)
	if err != nil {
		return nil, false, err
	}
	if complete(report) {
		c.put(p.Hash, report)
	}
	return report, false, nil
}

func complete(r *TestReport) bool {
	for _, res := range r.Results {
		if res.Status == TestTimedOut || res.Status == TestNotRun {
			return false
		}
	}
	return true
}

func (c *TestCache) get(hash string) *TestReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reports[hash]
}

func (c *TestCache) put(hash string, r *TestReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.reports[hash]; ok {
		return
	}
	c.reports[hash] = r
	c.order = append(c.order, hash)
	for len(c.order) > c.limit {
		delete(c.reports, c.order[0])
		c.order = c.order[1:]
	}
}
