package haproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// cacheSections are the building blocks of the equivalence configurations.
var cacheSections = map[string]string{
	"pre":      "# generated\n\n",
	"global":   "global\n    log stdout format raw local0\n    maxconn 1000\n",
	"defaults": "defaults\n    mode http\n    log global\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n",
	"fe":       "frontend fe\n    bind 127.0.0.1:18080\n    use_backend %[req.hdr(host),lower,map({{dir}}/maps/host.map)]\n    default_backend be0\n",
	"be0":      "backend be0\n    server s1 127.0.0.1:8081\n",
	"be1":      "backend be1\n    balance roundrobin\n    option httpchk GET /healthz\n    server s1 127.0.0.1:8091 check weight 10\n    server s2 127.0.0.1:8092 check weight 10\n",
	"be1edit":  "backend be1\n    balance roundrobin\n    option httpchk GET /healthz\n    server s1 127.0.0.1:8091 check weight 20\n    server s2 127.0.0.1:8092 check weight 10\n",
	"be2":      "backend be2\n\n    # comment\n    server s1 127.0.0.1:8101\n\n",
	"be3":      "backend be3\n    mode http\n    server s1 127.0.0.1:8111\n",
	"listen":   "listen stats\n    bind 127.0.0.1:18081\n    mode http\n    stats enable\n",
	"res":      "resolvers dns\n    nameserver ns1 127.0.0.1:53\n    hold valid 10s\n",

	// syntax errors
	"synUnknown":   "backend bad1\n    mode wibble\n    server s1 127.0.0.1:8121\n",
	"synArgs":      "backend bad2\n    server s1 127.0.0.1:8131\n    balance nonsense\n    timeout server\n",
	"synTwo":       "backend bad3\n    retries x\n    server s1 127.0.0.1:8141\n    retries x\n",
	"synFrontend":  "frontend badfe\n    bind 127.0.0.1:18082\n    mode wibble\n",
	"synListen":    "listen badlisten\n    bind 127.0.0.1:18083\n    mode wobble\n",
	"synResolvers": "resolvers badres\n    nameserver ns1 127.0.0.1:53\n    hold valid\n",
	"synGlobal":    "global\n    log stdout format raw local0\n    nbthread frobnicate\n",
	"synDefaults":  "defaults\n    mode http\n    mode wibble\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n",
	"synPre":       "frobnicate\n",

	// schema errors
	"schPort":    "backend bad4\n    server s1 127.0.0.1:70000\n",
	"schPortTwo": "backend bad5\n    server s1 127.0.0.1:70001\n    server s2 127.0.0.1:70002\n",
	"schBind":    "frontend badbind\n    bind 127.0.0.1:70000\n",

	// defaults context: a backend's "from" is the last defaults' name
	"defNamedOK":  "defaults okdefs\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n",
	"defNamedBad": "defaults bad@defs\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n",

	// duplicates (config-parser merges or replaces them)
	"dupBe0": "backend be0\n    server s9 127.0.0.1:8099\n",
}

// cacheConfigs are configurations checked in sequence by one cached Checker:
// edits, moves, insertions, errors appearing and disappearing.
var cacheConfigs = []struct {
	name     string
	parts    []string
	fallback bool // the cache must refuse it (duplicate sections)
}{
	{name: "valid", parts: []string{"pre", "global", "defaults", "fe", "be0", "be1", "be2", "be3", "listen", "res"}},
	{name: "valid again", parts: []string{"pre", "global", "defaults", "fe", "be0", "be1", "be2", "be3", "listen", "res"}},
	{name: "one backend edited", parts: []string{"pre", "global", "defaults", "fe", "be0", "be1edit", "be2", "be3", "listen", "res"}},
	{name: "backends moved", parts: []string{"global", "defaults", "fe", "be3", "be1", "be0", "res", "be2", "listen"}},
	{name: "syntax unknown keyword", parts: []string{"global", "defaults", "fe", "be0", "be1", "synUnknown", "be2"}},
	{name: "syntax unknown keyword moved", parts: []string{"global", "defaults", "fe", "synUnknown", "be0", "be1", "be2"}},
	{name: "syntax invalid arguments", parts: []string{"global", "defaults", "fe", "be0", "synArgs", "be1"}},
	{name: "syntax several", parts: []string{"pre", "global", "defaults", "fe", "be0", "synTwo", "be1", "synUnknown", "synFrontend", "synListen", "synResolvers"}},
	{name: "syntax several shifted", parts: []string{"global", "defaults", "be2", "fe", "be0", "synResolvers", "synTwo", "be1", "synListen", "synUnknown", "synFrontend"}},
	{name: "syntax in global", parts: []string{"synGlobal", "defaults", "fe", "be0", "be1"}},
	{name: "syntax in defaults", parts: []string{"global", "synDefaults", "fe", "be0", "be1"}},
	{name: "syntax out of section", parts: []string{"synPre", "global", "defaults", "fe", "be0"}},
	{name: "schema server port", parts: []string{"global", "defaults", "fe", "be0", "be1", "schPort"}},
	{name: "schema moved and more", parts: []string{"global", "defaults", "schPortTwo", "fe", "schPort", "be0", "schBind", "be1"}},
	{name: "schema and syntax", parts: []string{"global", "defaults", "fe", "be0", "schPort", "synUnknown"}},
	{name: "schema after syntax fixed", parts: []string{"global", "defaults", "fe", "be0", "schPort", "be1"}},
	{name: "no global", parts: []string{"defaults", "fe", "be0", "be1"}},
	{name: "no defaults", parts: []string{"global", "fe", "be0", "be1"}},
	{name: "named defaults", parts: []string{"global", "defNamedOK", "fe", "be0", "be1", "be2"}},
	{name: "bad defaults name", parts: []string{"global", "defNamedBad", "fe", "be0", "be1", "be2"}},
	{name: "backends under both defaults", parts: []string{"global", "defNamedOK", "be1", "defNamedBad", "fe", "be0", "be2"}},
	{name: "backends moved between defaults", parts: []string{"global", "defNamedBad", "be1", "defNamedOK", "fe", "be0", "be2"}},
	{name: "duplicate backend", parts: []string{"global", "defaults", "fe", "be0", "be1", "dupBe0"}, fallback: true},
	{name: "valid at last", parts: []string{"pre", "global", "defaults", "fe", "be0", "be1", "be2", "be3", "listen", "res"}},
}

func cacheConfig(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		s, ok := cacheSections[p]
		if !ok {
			panic("no section " + p)
		}
		b.WriteString(s)
	}
	return b.String()
}

// checkOutcome is what must not differ between the cached and uncached paths.
type checkOutcome struct {
	Phase    phase.Phase
	Reason   string
	Findings []Finding
	Plain    string // a non-phase error
}

func outcomeOf(err error) checkOutcome {
	if err == nil {
		return checkOutcome{}
	}
	var pe *phase.Error
	if !errors.As(err, &pe) {
		return checkOutcome{Plain: err.Error()}
	}
	o := checkOutcome{Phase: pe.Phase, Reason: pe.Reason}
	var syn *SyntaxError
	var sch *SchemaError
	switch {
	case errors.As(err, &syn):
		o.Findings = syn.Findings
	case errors.As(err, &sch):
		o.Findings = sch.Findings
	}
	return o
}

// TestParseCacheEquivalence checks every configuration with a fresh
// cache-less Checker and with long-lived cached Checkers (default size, and
// tiny so that entries are evicted while in use), twice each, and requires
// identical outcomes: same phase, reason and findings with their lines. It
// also requires that the cached path really handled every configuration it
// can, and that re-checking an unchanged configuration parses no cacheable
// section.
func TestParseCacheEquivalence(t *testing.T) {
	variants := []Options{{}, {SkipSyntax: true}, {SkipSchema: true}}
	for _, base := range variants {
		t.Run(fmt.Sprintf("skipSyntax=%v/skipSchema=%v", base.SkipSyntax, base.SkipSchema), func(t *testing.T) {
			noCache := base
			noCache.ParseCacheEntries = -1
			tiny := base
			tiny.ParseCacheEntries = 3
			cached := realChecker(t, base)
			small := realChecker(t, tiny)
			ctx := context.Background()
			for _, cc := range cacheConfigs {
				ws := newTestWorkspace(t)
				b := bundleFor(ws.Dir(), cacheConfig(cc.parts), testMaps(), nil)
				plain := realChecker(t, noCache)
				_, err := plain.Check(ctx, b)
				want := outcomeOf(err)
				wantParse := outcomeOf(plain.parsePhases(ctx, b, &Result{Durations: map[phase.Phase]time.Duration{}}))
				for _, c := range []*Checker{cached, small} {
					for pass := 1; pass <= 2; pass++ {
						before := c.ParseCacheStats()
						_, err := c.Check(ctx, b)
						assert.Equal(t, want, outcomeOf(err), "%s: pass %d (cache size %d)", cc.name, pass, c.cache.max)
						after := c.ParseCacheStats()
						if pass == 2 && !cc.fallback && c == cached && want.Phase != phase.Syntax {
							assert.Equal(t, before.Misses, after.Misses, "%s: second check missed", cc.name)
						}
					}
					// The cached path must handle it (or refuse it) as expected.
					res := &Result{Durations: map[phase.Phase]time.Duration{}}
					handled, err := c.parsePhasesCached(ctx, b, res)
					assert.Equal(t, !cc.fallback, handled, cc.name)
					if handled {
						assert.Equal(t, wantParse, outcomeOf(err), "%s: parse phases", cc.name)
					}
				}
			}
			st := cached.ParseCacheStats()
			assert.NotZero(t, st.Hits)
			assert.NotZero(t, st.Misses)
			assert.LessOrEqual(t, small.ParseCacheStats().Entries, 3)
		})
	}
}

// TestParseCacheOneChange checks that an edit re-parses only the edited
// section and that the cache hands back rebased lines.
func TestParseCacheOneChange(t *testing.T) {
	c := realChecker(t, Options{})
	ctx := context.Background()
	ws := newTestWorkspace(t)
	b := benchBundle(50, ws.Dir())
	_, err := c.Check(ctx, b)
	require.NoError(t, err)
	st := c.ParseCacheStats()
	assert.Equal(t, uint64(51), st.Misses) // 50 backends + the frontend
	assert.Equal(t, 51, st.Entries)

	b.Config = strings.Replace(b.Config, "backend be7\n", "backend be7\n    mode wibble\n", 1)
	_, err = c.Check(ctx, b)
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, phase.Syntax, pe.Phase)
	after := c.ParseCacheStats()
	assert.Equal(t, st.Misses+1, after.Misses)
	assert.Equal(t, st.Hits+50, after.Hits)

	// Insert lines before everything: the cached error moves with its section.
	b.Config = "# one\n# two\n" + b.Config
	_, err = c.Check(ctx, b)
	require.True(t, errors.As(err, &pe))
	_, want := realChecker(t, Options{ParseCacheEntries: -1}).Check(ctx, b)
	assert.Equal(t, outcomeOf(want), outcomeOf(err))
	assert.Equal(t, after.Misses, c.ParseCacheStats().Misses)
}

// TestParseCacheConcurrent runs cached parse phases of changing
// configurations concurrently (run with -race) and compares each with the
// uncached outcome.
func TestParseCacheConcurrent(t *testing.T) {
	c := realChecker(t, Options{ParseCacheEntries: 8})
	ref := realChecker(t, Options{ParseCacheEntries: -1})
	ctx := context.Background()
	want := make([]checkOutcome, len(cacheConfigs))
	bundles := make([]*bundle.Bundle, len(cacheConfigs))
	for i, cc := range cacheConfigs {
		ws := newTestWorkspace(t)
		bundles[i] = bundleFor(ws.Dir(), cacheConfig(cc.parts), testMaps(), nil)
		want[i] = outcomeOf(ref.parsePhases(ctx, bundles[i], &Result{Durations: map[phase.Phase]time.Duration{}}))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cacheConfigs {
				j := (i + w*5) % len(cacheConfigs)
				res := &Result{Durations: map[phase.Phase]time.Duration{}}
				err := c.parsePhases(ctx, bundles[j], res)
				assert.Equal(t, want[j], outcomeOf(err), cacheConfigs[j].name)
			}
		}()
	}
	wg.Wait()
}
