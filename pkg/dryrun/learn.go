package dryrun

import (
	"context"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// shapeLearner is a Checker that can learn, in quiet periods, the shapes
// of the backend sections a live bundle has (a *haproxy.Checker:
// haproxy.Checker.LearnShapes).
type shapeLearner interface {
	LearnShapes(ctx context.Context, live *bundle.Bundle) int
}

// LearnShapes lets the pipeline's checker run ahead of time the stubs a
// proposal adding a backend section of one of live's common shapes would
// run (haproxy.Checker.LearnShapes), so that the first such proposal
// after a start does not wait for one. It returns how many haproxy -c
// runs it made (0 with a checker that cannot learn). The controller calls
// it in quiet periods; it changes how fast a check is, never its answer.
func (p *Pipeline) LearnShapes(ctx context.Context, live *bundle.Bundle) int {
	if l, ok := p.checker.(shapeLearner); ok {
		return l.LearnShapes(ctx, live)
	}
	return 0
}
