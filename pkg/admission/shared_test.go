package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/phase"
)

// A repeat of a request being decided joins its decision but keeps its
// own deadline (the rule for shared runs): when that comes first it is
// answered at once, timed out, and the decision goes on for the request
// that started it.
func TestARepeatWhoseDeadlineComesFirstIsAnsweredWhileTheDecisionGoesOn(t *testing.T) {
	r := newRepeats()
	st := &State{}
	started, release := make(chan struct{}), make(chan struct{})
	decide := func(context.Context) (Decision, Report) {
		close(started)
		<-release
		return Deny(phase.Render, "Service 'api' not found"), Report{}
	}
	starter, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	first := make(chan Decision, 1)
	go func() { d, _ := r.decide(starter, "key", st, nil, decide); first <- d }()
	<-started

	repeat, cancelRepeat := context.WithDeadline(context.Background(), time.Now()) // over already
	defer cancelRepeat()
	answered := make(chan Decision, 1)
	go func() { d, _ := r.decide(repeat, "key", st, nil, decide); answered <- d }()
	select {
	case d := <-answered:
		assert.False(t, d.Allowed)
		assert.Equal(t, ReasonTimedOut, d.Reason)
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		require.Fail(t, "the repeat waited past its deadline for the decision it joined")
	}
	assert.Equal(t, 1, r.flights.Waiting("key"), "the decision goes on for the request that started it")
	close(release)
	assert.Equal(t, "Service 'api' not found", (<-first).Reason)
}

// A shared decision is bounded by the deadline of the request that
// started it (not by its cancellation): its check slot's wait and its
// checks see that deadline, as a decision of its own would.
func TestASharedDecisionRunsUnderItsStartersDeadline(t *testing.T) {
	r := newRepeats()
	starter, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	want, _ := starter.Deadline()
	var got time.Time
	r.decide(starter, "key", &State{}, nil, func(ctx context.Context) (Decision, Report) {
		got, _ = ctx.Deadline()
		return Allow(), Report{}
	})
	assert.True(t, got.Equal(want), "the decision ran until %s, its starter's deadline is %s", got, want)
}
