package dryrun

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// DefaultDirectTimeout bounds one ValidateDirect call, as the webhook requires.
const DefaultDirectTimeout = 5 * time.Second

// Request is one proposed change to a watched resource.
type Request struct {
	// Resource is the group/version/resource of the object, as the API server
	// names it in the AdmissionReview (never guessed from the Kind).
	Resource schema.GroupVersionResource
	// Operation is CREATE, UPDATE or DELETE.
	Operation store.Operation
	// Object is the proposed object (nil for DELETE).
	Object *unstructured.Unstructured
	// OldObject is the object as it was (UPDATE, DELETE).
	OldObject *unstructured.Unstructured
}

// Decision is the outcome of a dry run.
type Decision struct {
	// Allowed is true when the change may be admitted.
	Allowed bool
	// Reason is the short, user-readable denial reason.
	Reason string
	// Phase is the phase that denied (empty when allowed).
	Phase phase.Phase
	// Warnings are HAProxy's warnings for an allowed change.
	Warnings []string
	// Err is the underlying error of a denial.
	Err error
	// TestsCached reports that the embedded tests' result came from the cache.
	TestsCached bool
	// Durations are the times of the render and check phases that ran.
	Durations map[phase.Phase]time.Duration
}

// State is what a dry run reads: the pipeline of the current config and the
// actual stores. The controller swaps it atomically on a config change.
type State struct {
	// Pipeline is built from the current config.
	Pipeline *Pipeline
	// Stores are the actual stores, by store key.
	Stores map[string]*store.Store
}

// DryRunValidator validates proposed changes against the current State.
// It is safe for concurrent use; there is no lock on the admission path.
type DryRunValidator struct {
	state atomic.Pointer[State]
	// Tests caches embedded test results by config hash.
	Tests *TestCache
	// DirectTimeout bounds ValidateDirect; zero means DefaultDirectTimeout.
	DirectTimeout time.Duration
	// TestTimeout bounds the embedded test run; zero means DefaultTestTimeout.
	TestTimeout time.Duration
}

// NewDryRunValidator returns a validator over st.
func NewDryRunValidator(st *State) *DryRunValidator {
	v := &DryRunValidator{Tests: NewTestCache(16)}
	v.SetState(st)
	return v
}

// SetState replaces the config pipeline and stores the validator reads.
func (v *DryRunValidator) SetState(st *State) { v.state.Store(st) }

// State returns the current state.
func (v *DryRunValidator) State() *State { return v.state.Load() }

// ValidateDirect decides req under a DirectTimeout (5 s) deadline: overlay of
// the actual stores with the proposed change, render and check
// (ProposalValidator, 30 s), then the embedded tests (Workers: 1, 60 s,
// cached by config hash).
func (v *DryRunValidator) ValidateDirect(ctx context.Context, req Request) Decision {
	st := v.state.Load()
	if st == nil || st.Pipeline == nil {
		return deny(&phase.Error{Phase: phase.Render, Reason: "the controller has no valid configuration loaded yet"})
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(v.DirectTimeout, DefaultDirectTimeout))
	defer cancel()

	stores, changed, err := overlayFor(st, req)
	if err != nil {
		return deny(err)
	}
	if !changed {
		return Decision{Allowed: true}
	}
	res, err := st.Pipeline.Proposal.Validate(ctx, stores)
	if err != nil {
		d := denyTimeout(ctx, err, "rendering and checking the configuration")
		d.Durations = res.Durations
		return d
	}
	report, cached, err := v.Tests.Run(ctx, st.Pipeline, TestOptions{Workers: 1, Timeout: orDefault(v.TestTimeout, DefaultTestTimeout)})
	if err != nil {
		d := denyTimeout(ctx, err, "the embedded validation tests")
		d.Durations = res.Durations
		return d
	}
	if err := report.Err(); err != nil {
		d := deny(err)
		d.TestsCached, d.Durations = cached, res.Durations
		return d
	}
	return Decision{Allowed: true, Warnings: res.Warnings, TestsCached: cached, Durations: res.Durations}
}

// ValidateConfig decides a proposed HAProxyTemplateConfig: its templates
// rendered over the actual stores (stores it newly watches are empty),
// checked, and its own embedded tests run.
func (v *DryRunValidator) ValidateConfig(ctx context.Context, proposed *Pipeline) Decision {
	ctx, cancel := context.WithTimeout(ctx, orDefault(v.DirectTimeout, DefaultDirectTimeout))
	defer cancel()
	var actual map[string]*store.Store
	if st := v.state.Load(); st != nil {
		actual = st.Stores
	}
	stores := make(store.Set, len(proposed.Config.Spec.WatchedResources))
	for key, w := range proposed.Config.Spec.WatchedResources {
		if s, ok := actual[key]; ok && sameIndex(s.IndexBy(), w.IndexBy) {
			stores[key] = s
			continue
		}
		empty, err := store.New(w.IndexBy)
		if err != nil {
			return deny(&phase.Error{Phase: phase.Render, Reason: err.Error(), Err: err})
		}
		stores[key] = empty
	}
	res, err := proposed.Proposal.Validate(ctx, stores)
	if err != nil {
		d := denyTimeout(ctx, err, "rendering and checking the configuration")
		d.Durations = res.Durations
		return d
	}
	report, cached, err := v.Tests.Run(ctx, proposed, TestOptions{Workers: 1, Timeout: orDefault(v.TestTimeout, DefaultTestTimeout)})
	if err != nil {
		return denyTimeout(ctx, err, "the embedded validation tests")
	}
	if err := report.Err(); err != nil {
		return deny(err)
	}
	return Decision{Allowed: true, Warnings: res.Warnings, TestsCached: cached, Durations: res.Durations}
}

// overlayFor returns the stores with req applied to every watched resource
// whose apiVersion and resources equal req.Resource, honouring each one's
// label selector. changed is false when no store would change.
func overlayFor(st *State, req Request) (store.Set, bool, error) {
	spec := &st.Pipeline.Config.Spec
	set := ReadOnly(st.Stores)
	changed := false
	for _, key := range spec.StoreKeysFor(req.Resource) {
		change, ok, err := changeFor(spec.WatchedResources[key], req)
		if err != nil {
			return nil, false, &phase.Error{Phase: phase.Render, Reason: err.Error(), Err: err}
		}
		if !ok {
			continue
		}
		if set, err = set.WithChange(key, change); err != nil {
			return nil, false, &phase.Error{Phase: phase.Render, Reason: err.Error(), Err: err}
		}
		changed = true
	}
	return set, changed, nil
}

// changeFor turns req into the change one watched resource sees: an object
// outside its label selector is not in its store, so an UPDATE that moves an
// object out of the selector is a DELETE there, and a CREATE outside it is no
// change at all.
func changeFor(w config.WatchedResource, req Request) (store.Change, bool, error) {
	sel := labels.Everything()
	if w.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(w.LabelSelector); err != nil {
			return store.Change{}, false, fmt.Errorf("labelSelector: %w", err)
		}
	}
	in := func(o *unstructured.Unstructured) bool { return o != nil && sel.Matches(labels.Set(o.GetLabels())) }
	newIn, oldIn := in(req.Object), in(req.OldObject)
	switch req.Operation {
	case store.Create:
		return store.Change{Operation: store.Create, Object: req.Object}, newIn, nil
	case store.Update:
		switch {
		case newIn:
			return store.Change{Operation: store.Update, Object: req.Object, OldObject: req.OldObject}, true, nil
		case oldIn || req.OldObject == nil:
			return store.Change{Operation: store.Delete, Object: req.Object, OldObject: req.OldObject}, true, nil
		}
		return store.Change{}, false, nil
	case store.Delete:
		return store.Change{Operation: store.Delete, Object: req.Object, OldObject: req.OldObject}, oldIn || req.OldObject == nil, nil
	}
	return store.Change{}, false, fmt.Errorf("unsupported operation %q", req.Operation)
}

func deny(err error) Decision {
	d := Decision{Allowed: false, Reason: Reason(err), Err: err}
	d.Phase, _ = phase.Of(err)
	return d
}

// denyTimeout denies err, saying what timed out when the deadline passed.
func denyTimeout(ctx context.Context, err error, what string) Decision {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		p, _ := phase.Of(err)
		d := Decision{Reason: fmt.Sprintf("validation timed out during %s", what), Phase: p, Err: err}
		return d
	}
	return deny(err)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func sameIndex(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
