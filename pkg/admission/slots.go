package admission

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ReasonBusy denies a change the controller could not start checking in
// time: too many checks run at once for the deadline to be met.
const ReasonBusy = "htc is busy: too many changes are being checked at once to check this one before the deadline; try again in a moment"

// reasonCancelled denies a change whose ctx was cancelled while it waited
// for its decision (the client gone).
const reasonCancelled = "validation was cancelled before the decision was made"

// ReasonTimedOut denies a change whose deadline passed while it waited for
// the decision an identical request started, which goes on for that
// request (see repeats and the rule for shared runs in the package doc).
const ReasonTimedOut = "validation timed out before the decision was made"

// slots bounds the checks that run at once and estimates how long one
// takes, so that a request that cannot finish before its deadline is
// turned away early (busy) instead of queueing until the API server gives
// up on it.
type slots struct {
	once sync.Once
	sem  chan struct{}
	// estimates are how long one check of each kind takes, in
	// nanoseconds, an exponential moving average per kind.
	estimates [checkKinds]atomic.Int64
	// running counts the slots taken now (sem is sized on first use, so
	// its length cannot be read before then without a race).
	running atomic.Int32
}

// checkKind tells apart the checks whose durations are averaged apart. A
// proposed config's check renders every object anew (seconds at 10,000
// routes) while a change's reuses the live render's records
// (milliseconds): one average of both turned changes away as busy after a
// few config admissions, until enough change checks brought it down.
type checkKind int

const (
	changeCheck checkKind = iota // a change of a watched resource
	configCheck                  // a proposed HAProxyTemplateConfig
	checkKinds
)

// inFlight is the number of checks holding a slot now.
func (s *slots) inFlight() int { return int(s.running.Load()) }

// init sizes the slots (n <= 0: GOMAXPROCS, the CPUs the process may
// use: Go derives it from the container's CPU limit, where NumCPU counts
// every CPU of the node).
func (s *slots) init(n int) {
	s.once.Do(func() {
		if n <= 0 {
			n = runtime.GOMAXPROCS(0)
		}
		s.sem = make(chan struct{}, n)
	})
}

// acquire takes one of n slots (sized on first use, see init), waiting
// while ctx leaves time for one check after the wait. It returns a release
// function, which also folds how long the check took into the estimate,
// or false when the request should be turned away (busy).
func (s *slots) acquire(ctx context.Context, n int, kind checkKind) (release func(), ok bool) {
	s.init(n)
	select {
	case s.sem <- struct{}{}:
		return s.taken(kind), true
	default:
	}
	wait, cancel, ok := timeFor(ctx, time.Duration(s.estimates[kind].Load()))
	defer cancel()
	if !ok {
		return nil, false
	}
	select {
	case s.sem <- struct{}{}:
		return s.taken(kind), true
	case <-wait.Done():
		return nil, false
	}
}

// taken is the release function of a slot taken now for a check of kind.
func (s *slots) taken(kind checkKind) func() {
	start := time.Now()
	s.running.Add(1)
	return func() { s.observe(kind, time.Since(start)); s.running.Add(-1); <-s.sem }
}

// observe folds one check's duration into the estimate of its kind.
func (s *slots) observe(kind checkKind, d time.Duration) {
	e := &s.estimates[kind]
	for {
		old := e.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/4
		}
		if e.CompareAndSwap(old, next) {
			return
		}
	}
}
