package haproxy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/phase"
)

// TestParseMemoAnswersAsTheParsePhases: for every configuration of the
// parse cache's equivalence test (passing ones, syntax and schema
// findings, duplicates), with and without either phase, the kept outcome
// is the phases' own, when first found and when found again; a check
// whose context ended keeps nothing.
func TestParseMemoAnswersAsTheParsePhases(t *testing.T) {
	ctx := context.Background()
	fresh := func() *Result { return &Result{Durations: map[phase.Phase]time.Duration{}} }
	for _, opts := range []Options{{}, {SkipSyntax: true}, {SkipSchema: true}} {
		ref := realChecker(t, opts)
		ref.parsed = nil
		c := realChecker(t, opts)
		failed := 0
		for _, cc := range cacheConfigs {
			b := bundleFor(testBase, cacheConfig(cc.parts), testMaps(), nil)
			want := outcomeOf(ref.parsePhases(ctx, b, fresh()))
			if want.Phase != "" || want.Plain != "" {
				failed++
			}
			for pass := 1; pass <= 2; pass++ {
				res := fresh()
				assert.Equal(t, want, outcomeOf(c.parsePhasesMemo(ctx, b, res)), "%s (%+v): pass %d", cc.name, opts, pass)
				if pass == 2 {
					assert.Empty(t, res.Durations, "%s (%+v): the second check parsed", cc.name, opts)
				}
			}
		}
		require.Greater(t, failed, 2, "%+v: the configurations include findings", opts)
	}

	c := realChecker(t, Options{})
	b := bundleFor(testBase, cacheConfig([]string{"global", "defaults", "fe", "be0", "synUnknown"}), testMaps(), nil)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, c.parsePhasesMemo(canceled, b, fresh()))
	assert.Zero(t, c.parsed.runs.Len(), "a canceled check keeps nothing")
	require.Error(t, c.parsePhasesMemo(ctx, b, fresh()))
	assert.Equal(t, 1, c.parsed.runs.Len())
}
