package haproxy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"

	parser "github.com/haproxytech/config-parser/v5"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// DefaultParseCacheEntries is the section capacity of a Checker's parse cache
// when Options.ParseCacheEntries is zero.
const DefaultParseCacheEntries = 50000

// ParseCacheStats counts the lookups of a Checker's per-section parse cache.
// Hits and Misses are monotonic counters (one per cacheable section looked up
// per Check); Entries is the current number of cached sections.
type ParseCacheStats struct {
	Hits    uint64
	Misses  uint64
	Entries int
}

// relFinding is a finding relative to its section: line is the offset from
// the section's header line, or -1 for a finding reported at line 0.
type relFinding struct {
	line int
	msg  string
}

// sectionEntry is the cached syntax and schema findings of one section. An
// entry is immutable once stored; a phase is cached only once computed.
type sectionEntry struct {
	syntax, schema       []relFinding
	hasSyntax, hasSchema bool
}

// sectionKey identifies a section's text in its context.
type sectionKey [sha256.Size]byte

// parseCache is a bounded FIFO map of section findings. mu guards the map
// and the counters only; parsing never happens under it.
type parseCache struct {
	mu      sync.Mutex
	max     int
	entries map[sectionKey]*sectionEntry
	order   []sectionKey // insertion order, oldest first (a FIFO ring)
	head    int          // index of the oldest key in order once full
	hits    uint64
	misses  uint64
}

func newParseCache(n int) *parseCache {
	return &parseCache{max: n, entries: make(map[sectionKey]*sectionEntry)}
}

// lookup sets the cached entry of each cacheable section (nil when absent)
// and counts hits and misses.
func (pc *parseCache) lookup(secs []*cfgSection) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, s := range secs {
		if !s.cacheable {
			continue
		}
		if e, ok := pc.entries[s.key]; ok {
			s.entry = e
			pc.hits++
		} else {
			pc.misses++
		}
	}
}

// store records entries, evicting the oldest when full.
func (pc *parseCache) store(secs []*cfgSection, entries []*sectionEntry) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for i, s := range secs {
		if _, ok := pc.entries[s.key]; ok {
			pc.entries[s.key] = entries[i]
			continue
		}
		if len(pc.order) < pc.max {
			pc.order = append(pc.order, s.key)
		} else {
			delete(pc.entries, pc.order[pc.head])
			pc.order[pc.head] = s.key
			pc.head = (pc.head + 1) % pc.max
		}
		pc.entries[s.key] = entries[i]
	}
}

func (pc *parseCache) stats() ParseCacheStats {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return ParseCacheStats{Hits: pc.hits, Misses: pc.misses, Entries: len(pc.entries)}
}

// ParseCacheStats reports the per-section parse cache counters; all zero when
// the cache is disabled.
func (c *Checker) ParseCacheStats() ParseCacheStats {
	if c.cache == nil {
		return ParseCacheStats{}
	}
	return c.cache.stats()
}

// cfgSection is one section of haproxy.cfg: the header line and every line up
// to the next header, as indexConfig cuts them.
type cfgSection struct {
	kind      string // header keyword; "#" for the leading pseudo-section
	name      string // config-parser's name (see indexConfig)
	start     int    // header line in haproxy.cfg (0 for the pseudo-section)
	text      string // exact text, terminators included
	cacheable bool   // false for the pseudo-section, global and defaults: always parsed
	ctx       []byte // hash of the defaults headers before it, for sections that take a "from"
	key       sectionKey
	entry     *sectionEntry // cached findings, from lookup

	subStart int // header line in the partial configuration
}

// splitConfig cuts cfg into sections. ok is false when the cache cannot
// reproduce the uncached result faithfully (two sections with the same kind
// and name, which config-parser merges or replaces).
func splitConfig(cfg string) (secs []*cfgSection, ok bool) {
	sp := &splitter{seen: make(map[[2]string]bool), defaultsCtx: contenthash.New()}
	cur := &cfgSection{kind: "#", name: "data"}
	secs = append(secs, cur)
	textStart := 0
	ok = true
	eachLine(cfg, func(n, offset int, line string, header []string) bool {
		if header == nil {
			return true
		}
		cur.text = cfg[textStart:offset]
		textStart = offset
		if cur = sp.header(header, line, n); cur == nil {
			ok = false
			return false
		}
		secs = append(secs, cur)
		return true
	})
	if !ok {
		return nil, false
	}
	cur.text = cfg[textStart:]
	// One Key for every section's: no digest per section.
	k := contenthash.New()
	for _, s := range secs {
		if s.cacheable {
			s.key = k.Reset().Bytes(s.ctx).String(s.text).Sum256()
		}
	}
	return secs, true
}

// splitter is splitConfig's state between section headers.
type splitter struct {
	seen    map[[2]string]bool // kind and name
	unnamed int
	// defaultsCtx hashes every defaults header seen so far: config-parser
	// names unnamed defaults by counting them, and frontend, backend and
	// listen sections take the last defaults name as their "from".
	defaultsCtx *contenthash.Key
	ctxSum      []byte
}

// header starts the section whose header line (number lineNo) has words;
// nil when a section of that kind and name was seen before.
func (sp *splitter) header(words []string, line string, lineNo int) *cfgSection {
	name := sectionName(words, &sp.unnamed)
	if words[0] == "defaults" {
		sum := sp.defaultsCtx.String(line).Sum256()
		sp.ctxSum = sum[:]
	}
	k := [2]string{words[0], name}
	if sp.seen[k] {
		return nil
	}
	sp.seen[k] = true
	s := &cfgSection{kind: words[0], name: name, start: lineNo}
	s.cacheable = words[0] != "global" && words[0] != "defaults"
	switch words[0] {
	case "frontend", "backend", "listen":
		s.ctx = sp.ctxSum
	}
	return s
}

// errNoCache makes the cached path fall back to the uncached one.
type errNoCache struct{ why string }

func (e *errNoCache) Error() string { return "parse cache: " + e.why }

// partial is one config-parser run over a subset of the sections.
type partial struct {
	secs []*cfgSection // in haproxy.cfg order
	p    parser.Parser
	idx  *configIndex
}

// parsePartial parses the always-parsed sections plus those of want, in
// haproxy.cfg order, and checks that config-parser sees the same sections.
// The end of ctx is returned as is; any other failure is an *errNoCache.
func parsePartial(ctx context.Context, all []*cfgSection, want func(*cfgSection) bool) (*partial, error) {
	pt := &partial{}
	var b strings.Builder
	line := 1 // line number where the next section starts in the partial text
	for _, s := range all {
		if s.cacheable && !want(s) {
			continue
		}
		if s.kind == "#" {
			s.subStart = 0
		} else {
			s.subStart = line
		}
		b.WriteString(s.text)
		line += strings.Count(s.text, "\n")
		pt.secs = append(pt.secs, s)
	}
	text := b.String()
	p, err := parseConfig(ctx, text)
	if err != nil {
		if ctxErr := ctxDone(ctx); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &errNoCache{err.Error()}
	}
	pt.p, pt.idx = p, indexConfig(text)
	if err := pt.sameSections(); err != nil {
		return nil, err
	}
	return pt, nil
}

// sameSections checks that config-parser cut the partial text into exactly
// the sections splitConfig found.
func (pt *partial) sameSections() error {
	expected := make(map[parser.Section]int)
	for _, s := range pt.secs {
		if s.kind == "#" {
			continue
		}
		span := pt.idx.section(s.kind, s.name)
		if span == nil || span.start != s.subStart {
			return &errNoCache{"section index mismatch"}
		}
		expected[parser.Section(s.kind)]++
	}
	for _, sec := range parsedSections() {
		if sec == parser.Comments || sec == parser.Global {
			// config-parser always has both, named "data", section or not.
			delete(expected, sec)
			continue
		}
		names, err := pt.p.SectionsGet(sec)
		if err != nil {
			names = nil
		}
		if len(names) != expected[sec] {
			return &errNoCache{fmt.Sprintf("config-parser found %d %s sections, expected %d", len(names), sec, expected[sec])}
		}
		for _, n := range names {
			if pt.idx.section(string(sec), n) == nil {
				return &errNoCache{"section name mismatch"}
			}
		}
		delete(expected, sec)
	}
	if len(expected) != 0 {
		return &errNoCache{"section kind not parsed"}
	}
	return nil
}

// hasGlobal reports whether the partial text has a global section.
func (pt *partial) hasGlobal() bool {
	for _, s := range pt.secs {
		if s.kind == "global" {
			return true
		}
	}
	return false
}

// toRel converts findings of the partial text to section-relative ones.
func (s *cfgSection) toRel(fs []Finding) []relFinding {
	if len(fs) == 0 {
		return nil
	}
	out := make([]relFinding, len(fs))
	for i, f := range fs {
		rel := -1
		if f.Line != 0 {
			rel = f.Line - s.subStart
		}
		out[i] = relFinding{line: rel, msg: f.Message}
	}
	return out
}

// fromRel converts section-relative findings to haproxy.cfg lines.
func (s *cfgSection) fromRel(rs []relFinding) []Finding {
	out := make([]Finding, len(rs))
	for i, r := range rs {
		line := 0
		if r.line >= 0 {
			line = s.start + r.line
		}
		out[i] = Finding{File: bundle.ConfigFileName, Line: line, Message: r.msg}
	}
	return out
}

// sectionOrder sorts sections the way checkSyntax and checkSchema visit them:
// by kind in parsedSections order, then by name.
func sectionOrder(secs []*cfgSection) []*cfgSection {
	rank := make(map[string]int)
	for i, sec := range parsedSections() {
		rank[string(sec)] = i
	}
	out := append([]*cfgSection(nil), secs...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank[out[i].kind], rank[out[j].kind]
		if ri != rj {
			return ri < rj
		}
		return out[i].name < out[j].name
	})
	return out
}

// knownSection reports whether checkSyntax visits sections of kind.
func knownSection(kind string) bool {
	for _, sec := range parsedSections() {
		if string(sec) == kind {
			return true
		}
	}
	return false
}

// schemaSections runs the schema checks of checkSchema section by section
// over a partial parse, for the sections want selects: fs[i] are the
// findings of pt.secs[i], in the order checkSchema produces them, checking
// ctx before each section and each server. A panic inside client-native is
// returned as an error.
func schemaSections(ctx context.Context, pt *partial, want func(*cfgSection) bool) (fs [][]Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			fs, err = nil, fmt.Errorf("client-native failed: %v", r)
		}
	}()
	fs = make([][]Finding, len(pt.secs))
	hasGlobal := pt.hasGlobal()
	for i, s := range pt.secs {
		r := &schemaRun{ctx: ctx, p: pt.p, idx: pt.idx}
		if r.stopped() {
			return nil, r.err
		}
		if !want(s) {
			continue
		}
		switch s.kind {
		case "#":
			// checkSchema validates the global model even when there is
			// no global section; its findings (at line 0) come first.
			if !hasGlobal {
				r.global()
			}
		case "global":
			r.global()
		case "defaults":
			r.defaults(s.name)
		case "frontend":
			r.frontend(s.name)
		case "backend":
			r.backend(s.name)
		}
		if r.stopped() {
			return nil, r.err
		}
		fs[i] = r.findings
	}
	return fs, nil
}
