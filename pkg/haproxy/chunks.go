package haproxy

import (
	"context"
	"sort"
	"time"

	parser "github.com/haproxytech/config-parser/v5"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// config-parser holds about 100 bytes of heap per byte of configuration
// while its result is in use (2 MiB of haproxy.cfg with 10,000 backends:
// 200 MiB). The per-section path therefore parses the sections it needs in
// chunks of at most maxChunkBytes of text, one chunk at a time, so that the
// heap of the syntax and schema phases stays bounded whatever the size of
// the configuration; a section larger than maxSectionBytes (or global and
// defaults together) is not parsed at all, and configurations the
// per-section path cannot handle are parsed whole only up to maxWholeBytes:
// `haproxy -c` alone judges what is larger.
const (
	maxChunkBytes   = 256 << 10
	maxSectionBytes = 1 << 20
	maxWholeBytes   = 1 << 20
)

// parsePhasesCached runs the syntax and schema phases section by section,
// through the per-section cache when the Checker has one. It returns
// handled=false when the configuration must take the whole-configuration
// path instead (then res is left for parsePhases to fill).
func (c *Checker) parsePhasesCached(ctx context.Context, b *bundle.Bundle, res *Result) (handled bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			handled, err = false, nil
		}
	}()
	start := time.Now()
	all, ok := splitConfig(b.Config)
	if !ok {
		return false, nil
	}
	run := &cachedRun{ctx: ctx, all: all, ordered: sectionOrder(all), fresh: make(map[*cfgSection]*sectionEntry),
		syntax: !c.skipSyntax, schema: !c.skipSchema, chunkBytes: c.chunkBytes}
	if c.cache != nil {
		var cacheable []*cfgSection
		for _, s := range all {
			if s.cacheable {
				cacheable = append(cacheable, s)
			}
		}
		c.cache.lookup(cacheable)
		defer func() {
			if handled {
				run.storeIn(c.cache)
			}
		}()
	}
	if handled, err := run.parseChunks(); !handled || err != nil {
		res.Durations[run.firstPhase()] = time.Since(start)
		return handled, err
	}
	return true, run.verdict(res, start)
}

// cachedRun is one parsePhasesCached: the sections and the entries
// computed so far.
type cachedRun struct {
	ctx            context.Context
	all            []*cfgSection // in haproxy.cfg order
	ordered        []*cfgSection // in the order checkSyntax and checkSchema visit them
	fresh          map[*cfgSection]*sectionEntry
	stored         []*cfgSection // cacheable sections with a fresh entry, to store
	syntax, schema bool          // the phases that run
	chunkBytes     int           // the text of one chunk (maxChunkBytes)
	schemaBroken   bool          // client-native failed on a chunk
	schemaTook     time.Duration
}

// firstPhase is the first phase that runs: a check cut short is reported
// in it.
func (r *cachedRun) firstPhase() phase.Phase {
	if r.syntax {
		return phase.Syntax
	}
	return phase.Schema
}

// verdict reports the findings of the phases that run, in order, with
// their durations (the schema phase's share of the chunks counts as its
// own).
func (r *cachedRun) verdict(res *Result, start time.Time) error {
	total := time.Since(start)
	if r.syntax {
		res.Durations[phase.Syntax] = total - r.schemaTook
		if findings := r.findings(func(e *sectionEntry) []relFinding { return e.syntax }); len(findings) > 0 {
			return phaseError(phase.Syntax, &SyntaxError{Findings: findings})
		}
	}
	if !r.schema {
		return nil
	}
	res.Durations[phase.Schema] = r.schemaTook
	if !r.syntax {
		res.Durations[phase.Schema] = total
	}
	if findings := r.findings(func(e *sectionEntry) []relFinding { return e.schema }); len(findings) > 0 {
		return phaseError(phase.Schema, &SchemaError{Findings: findings})
	}
	return nil
}

// entryOf returns the findings known for s: fresh, cached or none.
func (r *cachedRun) entryOf(s *cfgSection) *sectionEntry {
	if e := r.fresh[s]; e != nil {
		return e
	}
	if s.entry != nil {
		return s.entry
	}
	return &sectionEntry{}
}

// update returns a fresh copy of s's entry to fill in (cached entries are
// immutable).
func (r *cachedRun) update(s *cfgSection) *sectionEntry {
	e := *r.entryOf(s)
	if r.fresh[s] == nil && s.cacheable {
		r.stored = append(r.stored, s)
	}
	r.fresh[s] = &e
	return &e
}

// storeIn stores the fresh entries of cacheable sections in pc.
func (r *cachedRun) storeIn(pc *parseCache) {
	if len(r.stored) == 0 {
		return
	}
	entries := make([]*sectionEntry, len(r.stored))
	for i, s := range r.stored {
		entries[i] = r.fresh[s]
	}
	pc.store(r.stored, entries)
}

// findings collects one phase's findings of every section, sorted by line.
func (r *cachedRun) findings(of func(*sectionEntry) []relFinding) []Finding {
	var out []Finding
	for _, s := range r.ordered {
		out = append(out, s.fromRel(of(r.entryOf(s)))...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// needs reports which phases still have to look at s.
func (r *cachedRun) needs(s *cfgSection) (syntax, schema bool) {
	e := r.entryOf(s)
	return r.syntax && !e.hasSyntax, r.schema && !e.hasSchema
}

// chunks groups the cacheable sections that need a phase into chunks of at
// most chunkBytes of text (a larger section is a chunk of its own),
// always at least one, so that the always-parsed sections (global,
// defaults, the lines before the first section) are looked at too. A
// section over maxSectionBytes is not parsed: it is recorded without
// findings. ok is false when the always-parsed sections alone exceed
// maxSectionBytes.
func (r *cachedRun) chunks() (chunks []map[*cfgSection]bool, ok bool) {
	always, size := 0, 0
	cur := map[*cfgSection]bool{}
	for _, s := range r.all {
		if !s.cacheable {
			always += len(s.text)
			continue
		}
		syn, sch := r.needs(s)
		switch {
		case !syn && !sch:
			continue
		case len(s.text) > maxSectionBytes:
			e := r.update(s)
			e.hasSyntax, e.hasSchema = e.hasSyntax || syn, e.hasSchema || sch
			continue
		case size > 0 && size+len(s.text) > r.chunkBytes:
			chunks = append(chunks, cur)
			cur, size = map[*cfgSection]bool{}, 0
		}
		cur[s] = true
		size += len(s.text)
	}
	return append(chunks, cur), always <= maxSectionBytes
}

// parseChunks parses the chunks one after the other and records the
// findings of each section they hold. handled is false when the
// whole-configuration path must run instead.
func (r *cachedRun) parseChunks() (handled bool, err error) {
	chunks, ok := r.chunks()
	if !ok {
		return true, nil // left to haproxy -c
	}
	for i, chunk := range chunks {
		if err := ctxDone(r.ctx); err != nil {
			return true, phaseError(r.firstPhase(), err)
		}
		pt, err := parsePartial(r.ctx, r.all, func(s *cfgSection) bool { return chunk[s] })
		if err != nil {
			if ctxErr := ctxDone(r.ctx); ctxErr != nil {
				return true, phaseError(r.firstPhase(), ctxErr)
			}
			return false, nil
		}
		if handled, err := r.chunkFindings(pt, i == 0); !handled || err != nil {
			return handled, err
		}
	}
	if r.schemaBroken && len(r.findings(func(e *sectionEntry) []relFinding { return e.syntax })) == 0 {
		return false, nil // as when the schema phase itself fails
	}
	return true, nil
}

// chunkFindings records the syntax and schema findings of the sections of
// one chunk's parse that need them; the always-parsed sections only from
// the first chunk.
func (r *cachedRun) chunkFindings(pt *partial, first bool) (handled bool, err error) {
	needSyntax, needSchema := map[*cfgSection]bool{}, map[*cfgSection]bool{}
	for _, s := range pt.secs {
		if s.cacheable || first {
			needSyntax[s], needSchema[s] = r.needs(s)
		}
	}
	if r.syntax {
		if handled, err := r.syntaxFindings(pt, needSyntax); !handled || err != nil {
			return handled, err
		}
	}
	if !r.schema {
		return true, nil
	}
	start := time.Now()
	defer func() { r.schemaTook += time.Since(start) }()
	fs, err := schemaSections(r.ctx, pt, func(s *cfgSection) bool { return needSchema[s] })
	if err != nil {
		if ctxErr := ctxDone(r.ctx); ctxErr != nil {
			return true, phaseError(r.firstPhase(), ctxErr)
		}
		r.schemaBroken = true
		return true, nil
	}
	for i, s := range pt.secs {
		if needSchema[s] {
			e := r.update(s)
			e.schema, e.hasSchema = s.toRel(fs[i]), true
		}
	}
	return true, nil
}

// syntaxFindings records the syntax findings of the sections of pt that
// need them.
func (r *cachedRun) syntaxFindings(pt *partial, need map[*cfgSection]bool) (handled bool, err error) {
	used := lineCursor{}
	for _, s := range pt.secs {
		if !need[s] || !knownSection(s.kind) {
			continue
		}
		if err := ctxDone(r.ctx); err != nil {
			return true, phaseError(phase.Syntax, err)
		}
		fs, err := syntaxSection(pt.p, pt.idx, parser.Section(s.kind), s.name, used)
		if err != nil {
			return false, nil
		}
		if s.kind == "#" && !pt.hasGlobal() {
			// checkSyntax also visits config-parser's implicit global.
			gfs, err := syntaxSection(pt.p, pt.idx, parser.Global, "data", used)
			if err != nil {
				return false, nil
			}
			fs = append(fs, gfs...)
		}
		e := r.update(s)
		e.syntax, e.hasSyntax = s.toRel(fs), true
	}
	return true, nil
}
