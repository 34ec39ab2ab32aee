package haproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// TestParsedConfigsAreParsePhases: the outcome kept for a haproxy.cfg is
// what parse phases without any cache answer (a checker with
// ParseCacheEntries -1), for every configuration of the parse cache's
// tests (valid, syntax and schema findings, fallbacks); the second check
// of one text is answered from it without looking at a section, and a
// check cut short by its context keeps nothing.
func TestParsedConfigsAreParsePhases(t *testing.T) {
	for _, opts := range []Options{{}, {SkipSyntax: true}, {SkipSchema: true}} {
		c := realChecker(t, opts)
		noCache := opts
		noCache.ParseCacheEntries = -1
		ref := realChecker(t, noCache)
		require.Nil(t, ref.parsed, "a checker without the parse cache keeps no outcome")
		for _, cc := range cacheConfigs {
			b := bundleFor("/nonexistent/htc", cacheConfig(cc.parts), testMaps(), nil)
			want := outcomeOf(ref.parsePhases(context.Background(), b, &Result{Durations: map[phase.Phase]time.Duration{}}))

			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			if err := c.parsePhasesKept(cancelled, b, &Result{Durations: map[phase.Phase]time.Duration{}}); err != nil && !isFinding(err) {
				_, kept := c.parsed.kept.Get(parsedKey{config: b.Config, syntax: !c.skipSyntax, schema: !c.skipSchema, chunkBytes: c.chunkBytes})
				assert.False(t, kept, "%s: an outcome cut short is not kept", cc.name)
			}
			for pass := 1; pass <= 2; pass++ {
				before := c.ParseCacheStats()
				res := &Result{Durations: map[phase.Phase]time.Duration{}}
				assert.Equal(t, want, outcomeOf(c.parsePhasesKept(context.Background(), b, res)), "%s, pass %d", cc.name, pass)
				if pass == 2 {
					after := c.ParseCacheStats()
					assert.Equal(t, before.Hits+before.Misses, after.Hits+after.Misses, "%s: the kept outcome answers", cc.name)
				}
			}
		}
	}
}

// TestRetainKeepsTheLiveConfigsOutcomeOnly: Checker.Retain forgets the
// parse outcomes and policy scans of every haproxy.cfg but the live
// bundle's (each holds its text), and the live one's outcome answers as
// before; a nil bundle forgets them all.
func TestRetainKeepsTheLiveConfigsOutcomeOnly(t *testing.T) {
	c := realChecker(t, Options{})
	ctx := context.Background()
	var bundles []*bundle.Bundle
	for i := range 3 {
		b := bundleFor("/nonexistent/htc", cacheConfig(cacheConfigs[0].parts)+strings.Repeat("# another text\n", i), testMaps(), nil)
		bundles = append(bundles, b)
		_ = c.parsePhasesKept(ctx, b, &Result{Durations: map[phase.Phase]time.Duration{}})
		_, _ = c.evaluate(b, "")
	}
	require.Equal(t, 3, c.parsed.kept.Len())
	live := bundles[1]
	want := outcomeOf(c.parsePhases(ctx, live, &Result{Durations: map[phase.Phase]time.Duration{}}))
	c.Retain(live)
	assert.Equal(t, 1, c.parsed.kept.Len())
	_, kept := c.parsed.kept.Get(parsedKey{config: live.Config, syntax: true, schema: true, chunkBytes: c.chunkBytes})
	assert.True(t, kept, "the live haproxy.cfg's outcome is kept")
	before := c.ParseCacheStats()
	assert.Equal(t, want, outcomeOf(c.parsePhasesKept(ctx, live, &Result{Durations: map[phase.Phase]time.Duration{}})))
	assert.Equal(t, before, c.ParseCacheStats(), "answered from the kept outcome")
	assert.LessOrEqual(t, c.scans.Len(), 1, "at most the live haproxy.cfg's scan")
	c.Retain(nil)
	assert.Zero(t, c.parsed.kept.Len())
	assert.Zero(t, c.scans.Len())
}
