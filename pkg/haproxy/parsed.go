package haproxy

import (
	"context"
	"time"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// defaultParsedConfigs is how many outcomes parsedConfigs keeps. Each
// keeps the text of its haproxy.cfg: about 2 MiB at 10,000 backends.
const defaultParsedConfigs = 4

// parsedConfigs remembers the outcome of the syntax and schema phases
// (parsePhases) by the exact text of haproxy.cfg, the one thing they read
// (with the checker's fixed settings: which phases run, the chunk size):
// an admission that adds a route to an existing backend changes a map,
// not haproxy.cfg, and finds the outcome of its 10,000 backends without
// cutting them into sections and hashing each. Only outcomes about the
// text are kept (it passed, or a syntax or schema finding), never a
// deadline or cancellation; a kept outcome (an error value) is shared,
// never modified. It exists only with the per-section parse cache
// (Options.ParseCacheEntries not negative): a checker without one is the
// full computation the tests compare with (TestParsedConfigsAreParsePhases).
// Safe for concurrent use (lru.Cache).
type parsedConfigs struct {
	kept *lru.Cache // parsedKey -> parsed
}

type parsedKey struct {
	config         string
	syntax, schema bool
	chunkBytes     int
}

// parsed is a kept outcome: nil, or a syntax or schema *phase.Error.
type parsed struct{ err error }

func newParsedConfigs(n int) *parsedConfigs { return &parsedConfigs{kept: lru.New(n)} }

// parsePhasesKept is parsePhases, answered from the kept outcome of b's
// haproxy.cfg when there is one (its phases' durations are then the
// lookup's).
func (c *Checker) parsePhasesKept(ctx context.Context, b *bundle.Bundle, res *Result) error {
	if c.parsed == nil {
		return c.parsePhases(ctx, b, res)
	}
	start := time.Now()
	key := parsedKey{config: b.Config, syntax: !c.skipSyntax, schema: !c.skipSchema, chunkBytes: c.chunkBytes}
	if v, ok := c.parsed.kept.Get(key); ok {
		took := time.Since(start)
		if key.syntax {
			res.Durations[phase.Syntax] = took
		}
		if key.schema {
			res.Durations[phase.Schema] = took
		}
		return v.(parsed).err
	}
	err := c.parsePhases(ctx, b, res)
	if (err == nil || isFinding(err)) && ctx.Err() == nil {
		c.parsed.kept.Add(key, parsed{err: err})
	}
	return err
}

// retain forgets every outcome but the one of key (each holds the text of
// its haproxy.cfg): what is forgotten is parsed again when asked for.
func (p *parsedConfigs) retain(key parsedKey, ok bool) {
	v, found := p.kept.Get(key)
	p.kept.Clear()
	if ok && found {
		p.kept.Add(key, v)
	}
}
