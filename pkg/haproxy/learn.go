package haproxy

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

const (
	// maxLearnedShapes bounds the stubs one LearnShapes call runs (a
	// quarter of the memory's stubShapeKeys, so proposals' own shapes
	// stay).
	maxLearnedShapes = 16
	// minLearnedCount: a shape is learned when the live configuration has
	// at least this many sections of it (one of a kind is seldom repeated).
	minLearnedCount = 2
)

// shapeLearning remembers which live haproxy.cfg LearnShapes last went
// through, so that idle periods with the same live configuration cut it
// once.
type shapeLearning struct {
	mu   sync.Mutex
	last [32]byte
}

// LearnShapes runs, for the most common shapes of the live bundle's
// addable backend sections (at least minLearnedCount sections each, at
// most maxLearnedShapes stubs per call) that the stub memory does not
// know, the stub a proposal adding one section of that shape to live
// would run (stubSections with that section, no changed alone map), and
// remembers those haproxy -c accepts without a warning (shapes.go). The
// memory then holds only what haproxy -c answered for a stub of that
// shapeKey, as when a proposal ran it: the first proposal of a common
// shape after a start skips the stub (issue 34's CREATE p99) instead of
// waiting for it. It returns how many stubs ran. It does nothing unless
// the added-sections skip could apply to live (its key has an accepted
// base), and nothing for a live haproxy.cfg it went through last. The
// controller calls it in quiet periods. Safe for concurrent use with
// checks; Wait waits for it as for a Check.
func (c *Checker) LearnShapes(ctx context.Context, live *bundle.Bundle) (ran int) {
	if c.added == nil || c.fixtures || c.passed == nil || !c.shortcuts.On(shortcut.MapOnly) || live == nil {
		return 0
	}
	c.active.Add(1) // its stubs are the checker's haproxy runs too (Wait)
	defer c.active.Done()
	k := contenthash.New()
	k.String(live.Config)
	sum := k.Sum256()
	c.added.learning.mu.Lock()
	defer c.added.learning.mu.Unlock()
	if c.added.learning.last == sum {
		return 0
	}
	scan, err := c.checkPolicy(ctx, live)
	if err != nil {
		return 0
	}
	p := probeAdded(live, scan.LooseMaps, scan.AloneMaps)
	if p.key == "" { // the skip never applies to this haproxy.cfg
		c.added.learning.last = sum
		return 0
	}
	if _, ok := c.added.runs.Get(p.key); !ok {
		return 0 // not accepted (yet): the next quiet period looks again
	}
	defer func() {
		if ctx.Err() == nil {
			c.added.learning.last = sum
		}
	}()
	for _, i := range commonShapes(p.parts) {
		if ran == maxLearnedShapes || ctx.Err() != nil {
			return ran
		}
		added := map[int]bool{i: true}
		cfg, kept := stubSections(p.parts, added, "")
		stub := stubFiles(live, cfg, kept, nil)
		shape := shapeKey(p.parts, added, cfg, kept, stub)
		if shape == "" || c.added.shapes.known(shape) {
			continue
		}
		ran++
		if c.stubSectionsAccepted(ctx, stub) {
			c.added.shapes.add(shape)
		}
	}
	return ran
}

// commonShapes are the indexes in parts of one addable backend section
// of each shape (sectionShape) that at least minLearnedCount of them
// have, the most common shape first (then the first in the text).
func commonShapes(parts *cfgParts) []int {
	type group struct{ first, n int }
	groups := make(map[string]*group)
	for i, s := range parts.secs {
		if !parts.addable[i] {
			continue
		}
		shape, _, ok := sectionShape(strings.TrimRight(s.text, "\n"))
		if !ok {
			continue
		}
		if g := groups[shape]; g != nil {
			g.n++
		} else {
			groups[shape] = &group{first: i, n: 1}
		}
	}
	var common []*group
	for _, g := range groups {
		if g.n >= minLearnedCount {
			common = append(common, g)
		}
	}
	slices.SortFunc(common, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.first, b.first))
	})
	idx := make([]int, len(common))
	for j, g := range common {
		idx[j] = g.first
	}
	return idx
}
