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
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
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

	// many servers in one backend: findings located by the section index
	"beMany":     manyServers("beMany", 400, nil, nil),
	"schMany":    manyServers("schMany", 400, map[int]string{37: "127.0.0.1:70000", 250: "127.0.0.1:70001", 399: "127.0.0.1:80000"}, nil),
	"synMany":    manyServers("synMany", 400, nil, map[int]string{10: "frobnicate yes", 200: "frobnicate yes", 300: "balance nonsense", 350: "frobnicate yes"}),
	"schDupName": "backend schDupName\n    server s1 127.0.0.1:8151\n    server s1 127.0.0.1:70003\n    server s2 127.0.0.1:8152\n",
}

// manyServers is a backend of n servers; bad replaces the address of some,
// extra adds a line after some.
func manyServers(name string, n int, bad map[int]string, extra map[int]string) string {
	var b strings.Builder
	b.WriteString("backend " + name + "\n    balance roundrobin\n")
	for i := range n {
		addr := fmt.Sprintf("127.0.%d.%d:%d", i/250, i%250+1, 8000+i%7)
		if a, ok := bad[i]; ok {
			addr = a
		}
		fmt.Fprintf(&b, "    server s%d %s check weight 10\n", i, addr)
		if line, ok := extra[i]; ok {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
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
	{name: "many servers", parts: []string{"global", "defaults", "fe", "be0", "beMany", "be1"}},
	{name: "schema errors among many servers", parts: []string{"global", "defaults", "fe", "be0", "beMany", "schMany", "be1"}},
	{name: "syntax errors among many servers", parts: []string{"global", "defaults", "fe", "be0", "synMany", "schMany", "be1"}},
	{name: "syntax errors among many servers moved", parts: []string{"global", "defaults", "synMany", "fe", "be0", "be1"}},
	{name: "two servers of one name", parts: []string{"global", "defaults", "fe", "be0", "schDupName"}},
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
			chunked := realChecker(t, base) // parses a few sections at a time
			chunked.chunkBytes = 300
			ctx := context.Background()
			for _, cc := range cacheConfigs {
				ws := newTestWorkspace(t)
				b := bundleFor(ws.Dir(), cacheConfig(cc.parts), testMaps(), nil)
				plain := realChecker(t, noCache)
				_, err := plain.Check(ctx, b)
				want := outcomeOf(err)
				wantParse := outcomeOf(plain.parsePhases(ctx, b, &Result{Durations: map[phase.Phase]time.Duration{}}))
				for _, c := range []*Checker{cached, small, chunked} {
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

// TestSectionIndexMatchesScan: the per-section indexes that locate
// findings answer exactly what a scan of the section's lines answers (the
// way findings were located before: lineStarting scanned the section for
// each model, lineOf for each unprocessed line).
func TestSectionIndexMatchesScan(t *testing.T) {
	for _, cc := range cacheConfigs {
		cfg := cacheConfig(cc.parts) + "backend dups\n    frobnicate\n    x y\n    frobnicate\n  frobnicate  \n    x z\n    x y # c\n"
		idx := indexConfig(cfg)
		for _, span := range idx.sections {
			var queries [][]string
			for _, n := range span.lines {
				words := policy.Words(idx.text[n-1])
				for k := 0; k <= min(len(words), 3); k++ {
					queries = append(queries, words[:k])
				}
			}
			queries = append(queries, []string{"server", "nope"}, []string{"nope"})
			for _, q := range queries {
				assert.Equal(t, idx.scanStarting(span, q), idx.lineStarting(span, q...), "%s: %s %q", cc.name, span.name, q)
			}
			// lineOf hands out the unused lines of a text in order, as a
			// scan with a used set did; asking twice per text exhausts it.
			used, cursor := map[int]bool{}, lineCursor{}
			for range 2 {
				for _, n := range span.lines {
					text := strings.TrimSpace(idx.text[n-1])
					assert.Equal(t, scanLineOf(idx, span, text, used), idx.lineOf(span, text, cursor), "%s: %s %q", cc.name, span.name, text)
				}
			}
		}
	}
}

// scanLineOf is lineOf by a scan with a set of used lines.
func scanLineOf(idx *configIndex, s *sectionSpan, text string, used map[int]bool) int {
	for _, n := range s.lines {
		if !used[n] && strings.TrimSpace(idx.text[n-1]) == text {
			used[n] = true
			return n
		}
	}
	return 0
}

// countdownCtx is a context that ends (with DeadlineExceeded) after its Done
// channel was asked for n times: it stops a phase at a chosen point inside
// its work, deterministically.
type countdownCtx struct {
	context.Context
	mu   sync.Mutex
	left int
	done chan struct{}
}

func newCountdownCtx(n int) *countdownCtx {
	return &countdownCtx{Context: context.Background(), left: n, done: make(chan struct{})}
}

func (c *countdownCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left--; c.left == 0 {
		close(c.done)
	}
	return c.done
}

func (c *countdownCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestParsePhasesStopInside: the syntax and schema phases, cached and not,
// stop in the middle of their work when the context ends there (inside
// config-parser's parse, between sections, between servers), with a
// deadline error of their phase.
func TestParsePhasesStopInside(t *testing.T) {
	ws := newTestWorkspace(t)
	big := serversBundle(50, 200, ws.Dir()) // 10,000 servers, ~450 KiB
	for _, tc := range []struct {
		name  string
		opts  Options
		after int
		ph    phase.Phase
	}{
		{"syntax, parsing", Options{ParseCacheEntries: -1}, 5, phase.Syntax},
		{"syntax, between sections", Options{ParseCacheEntries: -1}, 150, phase.Syntax},
		{"schema, parsing", Options{ParseCacheEntries: -1, SkipSyntax: true}, 5, phase.Schema},
		{"schema, between servers", Options{ParseCacheEntries: -1, SkipSyntax: true}, 2000, phase.Schema},
		{"cached syntax, parsing", Options{}, 5, phase.Syntax},
		{"cached schema, between servers", Options{SkipSyntax: true}, 2000, phase.Schema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := realChecker(t, tc.opts)
			ctx := newCountdownCtx(tc.after)
			res := &Result{Durations: map[phase.Phase]time.Duration{}}
			err := c.parsePhases(ctx, big, res)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			var pe *phase.Error
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tc.ph, pe.Phase)
			assert.Equal(t, string(tc.ph)+" check timed out", pe.Reason)
			// The same bundle passes both phases with time to spare.
			require.NoError(t, realChecker(t, tc.opts).parsePhases(context.Background(), big, res))
		})
	}
}

// TestParseConfigStopsInside: config-parser's parse itself stops when the
// context ends while it reads the configuration.
func TestParseConfigStopsInside(t *testing.T) {
	big := serversBundle(50, 200, "/etc/haproxy").Config
	_, err := parseConfig(newCountdownCtx(3), big)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	p, err := parseConfig(context.Background(), big)
	require.NoError(t, err)
	names, err := p.SectionsGet("backend")
	require.NoError(t, err)
	assert.Len(t, names, 50)
}
