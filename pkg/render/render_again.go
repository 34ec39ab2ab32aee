package render

import (
	"context"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/store"
)

// A render reads the stores while the informers write them. A render that
// read a store while it was written may have read two states of it (an
// object listed, then gone; one object read twice with two contents): a
// state that never existed, whether the render then failed or passed. So
// Render takes the generations of its stores before and after it renders
// (storesGeneration): equal, no store was written in between, and every
// read saw the one state the stores held throughout; otherwise the render
// is torn and is done again over a snapshot of the stores
// (store.Set.Snapshot: copies taken at one moment, which no write
// changes), which reads one state by construction. Passed or failed, no
// render Render returns read two states.

// storesGeneration is the sum of the generations of the readers of set
// (store.Reader.Generation: their Store's): generations only grow, so the
// sum is the same at two moments only when no store was written between
// them. A reader that reads no Store has 0 (it cannot be told to move,
// nor snapshotted: only tests make such readers).
func storesGeneration(set store.Set) uint64 {
	var sum uint64
	for _, r := range set {
		if r != nil {
			sum += r.Generation()
		}
	}
	return sum
}

// renderConsistent renders in over one state of its stores: once over the
// stores, and, when a store was written meanwhile, once more over a
// snapshot of them (which records nothing: the first render's records
// stay, each checked when reused).
func (e *Engine) renderConsistent(ctx context.Context, in Input) (*bundle.Bundle, error) {
	gen := storesGeneration(in.Stores)
	b, err := e.renderConfirmed(ctx, in)
	if contextErr(ctx) != nil || storesGeneration(in.Stores) == gen {
		return b, err
	}
	e.torn.Add(1)
	in.Stores, in.Record = in.Stores.Snapshot(), false
	return e.renderConfirmed(ctx, in)
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
