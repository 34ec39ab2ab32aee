package haproxy

import (
	"context"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// parsedEntries bounds parsedConfigs: the live configuration's text and
// those of the few proposals that change it.
const parsedEntries = 8

// parsedConfigs remembers the outcome of the syntax and schema phases
// (parsePhases) by the SHA-256 of haproxy.cfg's text. The phases read
// nothing else of a bundle, and a Checker's SkipSyntax and SkipSchema
// never change (Allowing, WithShortcuts and Unreused keep them), so an
// equal text has the equal outcome: most admissions leave haproxy.cfg as
// the live one has it (a new route to an existing backend changes maps
// only), and skip the per-section cache's cutting and hashing of the whole
// text and its parsing of the global and defaults sections. Kept: a pass
// and a finding (isFinding) of phases that ran to their end (ctx still
// live); never a deadline, a cancellation or any other error. A stored error is shared by the checks that find it, and never
// changed (combine wraps it or returns it as it is). Safe for concurrent
// use (lru.Cache is). TestParseMemoAnswersAsTheParsePhases compares it
// with the phases run.
type parsedConfigs struct {
	runs *lru.Cache // [32]byte (SHA-256) -> parsedOutcome
}

// parsedOutcome is a kept outcome of parsePhases: nil or a finding.
type parsedOutcome struct{ err error }

func newParsedConfigs() *parsedConfigs { return &parsedConfigs{runs: lru.New(parsedEntries)} }

// parsePhasesMemo is parsePhases through c.parsed (see parsedConfigs);
// a check whose outcome was kept reports no syntax or schema duration.
func (c *Checker) parsePhasesMemo(ctx context.Context, b *bundle.Bundle, res *Result) error {
	if c.parsed == nil || c.skipSyntax && c.skipSchema {
		return c.parsePhases(ctx, b, res)
	}
	if err := ctx.Err(); err != nil {
		return c.parsePhases(ctx, b, res) // reports the end of ctx as the phases do
	}
	key := contenthash.New().String(b.Config).Sum256()
	if v, ok := c.parsed.runs.Get(key); ok {
		return v.(parsedOutcome).err
	}
	err := c.parsePhases(ctx, b, res)
	if (err == nil || isFinding(err)) && ctx.Err() == nil {
		c.parsed.runs.Add(key, parsedOutcome{err: err})
	}
	return err
}
