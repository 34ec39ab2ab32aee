package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/internal/flight"
)

// defaultRepeatEntries bounds the decisions kept for repeated requests
// (see repeats).
const defaultRepeatEntries = 32

// repeats answers a request identical to one decided (or being decided)
// against the same live state with that decision: `kubectl apply
// --dry-run=server` followed by the apply, a client retrying, several
// clients applying one manifest. Requests being decided at once share one
// decision (flight); decided ones are kept in a small LRU. A decision that
// depended on how busy the controller was (busy, timed out, not judged in
// time) is never reused.
//
// A kept decision stays right because everything it rests on is in its
// key: the request; the State (the config's pipeline: templates, tests,
// extraContext) and the Baseline, by identity; and every store's
// generation, which moves with any change of what the stores hold. Nothing
// else a template sees can change: no function a template can call reads
// the clock, the environment, randomness or the host (package render,
// TestEveryFunctionIsAllowedForAReason), every render reads one state of
// the stores (render.Engine.Render), and haproxy -c is a function of the
// bundle. The State and Baseline are named by their addresses in the
// key's text, which a flight's callers keep alive; a kept decision also
// holds weak pointers to them, which tell a gone State from a new one the
// allocator put at its address.
type repeats struct {
	flights flight.Group[outcome]
	decided *lru.Cache // key text -> kept
}

// kept is a decision kept for repeats: the outcome (Verdict without its
// Bundle) and the State and Baseline it was made against.
type kept struct {
	o    outcome
	st   weak.Pointer[State]
	base weak.Pointer[Baseline]
}

// ForgetDecisions drops the decisions kept for repeated requests: after a
// shortcut was found giving a wrong answer (package shadow), no decision
// it made is given again.
func (a *Admitter) ForgetDecisions() { a.repeats.Store(nil) }

// decide returns the decision for req under key: a reused one, or
// decide's. A shared run keeps the deadline of the request that started it
// (the flight's own context carries none): the caller owns the deadline,
// here as everywhere on the path. At that deadline a caller waits for the
// run's own answer (a timed-out verdict, given as soon as its checks stop)
// instead of racing it; a cancelled ctx (the client gone) stops the wait
// at once.
func (r *repeats) decide(ctx context.Context, key string, st *State, base *Baseline, decide func(context.Context) outcome) outcome {
	if key == "" {
		return decide(ctx)
	}
	against := kept{st: weak.Make(st), base: weak.Make(base)}
	if v, ok := r.decided.Get(key); ok && v.(kept).st == against.st && v.(kept).base == against.base {
		o := v.(kept).o
		o.Reused = true
		return o
	}
	deadline, bounded := ctx.Deadline()
	wait, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			stop()
		}
	})()
	o, shared, err := r.flights.Do(wait, key, func(ctx context.Context) (outcome, error) {
		if bounded {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		o := decide(ctx)
		if reusable(o) {
			against.o = slim(o)
			r.decided.Add(key, against)
		}
		return o, nil
	})
	if err != nil {
		return deny("", reasonCancelled)
	}
	o.Reused = shared
	return o
}

// reusable reports whether o holds for any identical request against the
// same state: not if it depended on time or load.
func reusable(o outcome) bool {
	return !o.Busy && !o.Incomplete && (o.Verdict == nil || !o.Verdict.TimedOut)
}

// slim returns o without its rendered bundle and the stores it rendered
// over (kept decisions must not hold a whole configuration, or the
// proposed objects, each).
func slim(o outcome) outcome {
	if o.Verdict != nil && (o.Verdict.Bundle != nil || o.Verdict.Stores != nil) {
		v := *o.Verdict
		v.Bundle, v.Stores = nil, nil
		o.Verdict = &v
	}
	return o
}

// repeatKey identifies a request against a live state: the operation,
// resource and objects, the state and baseline in use (their addresses:
// see repeats), and the contents of every store (their generations). ""
// when an object cannot be encoded (the request is then decided on its
// own).
func (a *Admitter) repeatKey(st *State, base *Baseline, req Request) string {
	k := contenthash.New()
	field := func(s string) { k.String(s) }
	field(string(req.Operation))
	field(req.Resource.String())
	for _, o := range []*unstructured.Unstructured{req.Object, req.OldObject} {
		if o == nil {
			field("nil")
			continue
		}
		b, err := json.Marshal(o.Object)
		if err != nil {
			return ""
		}
		field(string(b))
	}
	field(fmt.Sprintf("%p %p", st, base))
	keys := make([]string, 0, len(st.Stores))
	for k := range st.Stores {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k)
		if s := st.Stores[k]; s != nil {
			field(strconv.FormatUint(s.Generation(), 10))
		}
	}
	return k.Sum()
}
