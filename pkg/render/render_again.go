package render

import (
	"context"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// tornRenderAttempts bounds the renders of one Render whose stores moved
// while they failed.
const tornRenderAttempts = 3

// storesGeneration is the sum of the generations of the readers of set
// (Store, Overlay and Without have one: their base store's): generations
// only grow, so the sum is the same at two moments only when no store was
// written between them. A Reader without a generation counts 0 (it cannot
// be told to move).
func storesGeneration(set store.Set) uint64 {
	var sum uint64
	for _, r := range set {
		if g, ok := r.(interface{ Generation() uint64 }); ok {
			sum += g.Generation()
		}
	}
	return sum
}

// renderConfirmed renders once, reusing fragment records unless in.Full,
// and renders again in full when a render that reused records failed.
func (e *Engine) renderConfirmed(ctx context.Context, in Input) (*bundle.Bundle, error) {
	b, err, again := e.render(ctx, in, !in.Full)
	if again {
		// A render that reused records and failed is rendered again in
		// full, so that no failure (a denial) ever rests on a reused
		// record: its message would name the fragments that charged a
		// budget, not the function that ran out of it.
		e.confirmed.Add(1)
		b, err, _ = e.render(ctx, in, false)
	}
	return b, err
}
