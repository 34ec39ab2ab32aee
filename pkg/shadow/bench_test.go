package shadow

import (
	"testing"

	"github.com/stretchr/testify/require"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkChecks is what one shadow check costs the idle controller over
// the example library with 1,000 apps: render (a full render of the live
// state and the comparison), map-only (haproxy -c, reusing nothing),
// next to the live loop's incremental round over the same state.
func BenchmarkChecks(b *testing.B) {
	ex := htctestutil.NewExample(b, "../../examples/ingress/config.yaml", htctestutil.ExampleOptions{Apps: 1000})
	live := store.ReadOnly(ex.Stores)
	v, _ := ex.Pipeline.CheckWith(b.Context(), live, dryrun.CheckOptions{Record: true, SkipTests: true})
	require.NoError(b, v.Err)
	verifier := New(Options{})
	sample := &liveSample{pipeline: ex.Pipeline, stores: ex.Stores, gens: Generations(ex.Stores), bundle: v.Bundle}
	// The live loop's round of an unchanged state: an incremental,
	// recording render; the check's outcome is cached by the bundle hash.
	b.Run("live-round", func(b *testing.B) {
		for b.Loop() {
			v, _ := ex.Pipeline.CheckWith(b.Context(), live, dryrun.CheckOptions{Record: true, SkipTests: true})
			require.NoError(b, v.Err)
		}
	})
	b.Run("render", func(b *testing.B) {
		for b.Loop() {
			result, _ := verifier.checkRender(b.Context(), sample)
			require.Equal(b, ResultAgreed, result)
		}
	})
	b.Run("map-only", func(b *testing.B) {
		checker := ex.Checker.Allowing(nil).Unreused()
		for b.Loop() {
			_, err := checker.Check(b.Context(), v.Bundle)
			require.NoError(b, err)
		}
	})
}
