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
	flights flight.Group[kept]
	decided *lru.Cache // key text -> kept
}

// kept is a decision and its report as repeats hands them on: the answer
// of a shared run, and (with the State and Baseline it was made against,
// the Verdict without its Bundle) an entry of the LRU.
type kept struct {
	d    Decision
	r    Report
	st   weak.Pointer[State]
	base weak.Pointer[Baseline]
}

// newRepeats returns repeats keeping at most defaultRepeatEntries
// decisions, whose shared decisions end at the deadline of the request
// that started them (flight.Group.StartersDeadline).
func newRepeats() *repeats {
	return &repeats{flights: flight.Group[kept]{StartersDeadline: true}, decided: lru.New(defaultRepeatEntries)}
}

// ForgetDecisions drops the decisions kept for repeated requests: after a
// shortcut was found giving a wrong answer (package shadow), no decision
// it made is given again.
func (a *Admitter) ForgetDecisions() { a.repeats.Store(nil) }

// decide returns the decision for req under key: a kept one, or decide's,
// shared by the identical requests that arrive while it is made. The
// shared decision follows the rule for shared runs (package doc, and
// flight.Group.Do): its bound is the deadline of the request that started
// it; each request waits under its own deadline (one that comes first is
// answered at once, timed out) and a cancelled one (the client gone)
// stops waiting at once.
func (r *repeats) decide(ctx context.Context, key string, st *State, base *Baseline, decide func(context.Context) (Decision, Report)) (Decision, Report) {
	if key == "" {
		return decide(ctx)
	}
	against := kept{st: weak.Make(st), base: weak.Make(base)}
	if k, ok := r.keptFor(key, against); ok {
		return k.d, k.r
	}
	k, shared, err := r.flights.Do(ctx, key, func(ctx context.Context) (kept, error) {
		// Asked again inside the flight: a request that missed the
		// kept decisions just before an earlier flight kept its own
		// and ended would otherwise decide the same request twice.
		if k, ok := r.keptFor(key, against); ok {
			return k, nil
		}
		d, rep := decide(ctx)
		if reusable(rep) {
			r.decided.Add(key, kept{d: d, r: slim(rep), st: against.st, base: against.base})
		}
		return kept{d: d, r: rep}, nil
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Deny("", ReasonTimedOut), Report{}
	case err != nil:
		return Deny("", reasonCancelled), Report{}
	}
	k.r.Reused = k.r.Reused || shared
	return k.d, k.r
}

// keptFor returns the decision kept under key if it was made against the
// same State and Baseline as against, marked Reused.
func (r *repeats) keptFor(key string, against kept) (kept, bool) {
	v, ok := r.decided.Get(key)
	if !ok || v.(kept).st != against.st || v.(kept).base != against.base {
		return kept{}, false
	}
	k := v.(kept)
	k.r.Reused = true
	return k, true
}

// reusable reports whether a decision with report r holds for any
// identical request against the same state: not if it depended on time or
// load.
func reusable(r Report) bool {
	return !r.Busy && !r.Incomplete && (r.Verdict == nil || !r.Verdict.TimedOut)
}

// slim returns r without its verdict's rendered bundle and the stores it
// rendered over (kept decisions must not hold a whole configuration, or
// the proposed objects, each).
func slim(r Report) Report {
	if r.Verdict != nil && r.Verdict.Bundle != nil {
		v := *r.Verdict
		v.Bundle = nil
		r.Verdict = &v
	}
	r.Trace.Stores = nil
	return r
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
