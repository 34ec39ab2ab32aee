package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/haproxy"
)

// TestAdmissionCacheMetrics: the caches of the admission path are counted
// from each admission's report (docs/caches.md): a map-only change reuses
// an accepted haproxy -c run, the same request again is answered with its
// decision, and once the decisions are forgotten it is decided again over
// the check cache's outcome of the same bundle. The parse cache's counters
// are the checker's own.
func TestAdmissionCacheMetrics(t *testing.T) {
	f := newShortcutFixture(t, nil)
	require.True(t, f.c.live.sync(t.Context()))
	value := func(name string) float64 { return metricValue(f.c, name, nil) }
	req := ingressReq(ingressObj("a", "echo"))

	d := f.admit(t, req)
	require.True(t, d.Allowed, d.Reason)
	require.True(t, d.Trace.SemanticReused, "an Ingress changes only hosts.map")
	assert.Equal(t, 1.0, value("htc_check_semantic_reused_total"))
	assert.Zero(t, value("htc_admission_reused_total"))
	assert.Zero(t, value("htc_check_cache_hits_total"))

	require.True(t, f.admit(t, req).Reused)
	assert.Equal(t, 1.0, value("htc_admission_reused_total"))
	assert.Equal(t, 1.0, value("htc_check_semantic_reused_total"), "a reused decision is not counted again")

	f.c.admitter.ForgetDecisions()
	d = f.admit(t, req)
	require.False(t, d.Reused)
	require.True(t, d.Trace.CheckCached, "the same bundle as before")
	assert.Equal(t, 1.0, value("htc_check_cache_hits_total"))

	stats := f.c.env.CheckerFor(nil).(interface {
		ParseCacheStats() haproxy.ParseCacheStats
	}).ParseCacheStats()
	assert.Positive(t, stats.Misses)
	assert.Equal(t, float64(stats.Misses), value("htc_parse_cache_misses_total"))
	assert.Equal(t, float64(stats.Hits), value("htc_parse_cache_hits_total"))
	assert.Equal(t, float64(stats.Entries), value("htc_parse_cache_entries"))
}
