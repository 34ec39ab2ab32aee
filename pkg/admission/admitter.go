package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// ReasonNoConfig denies every change while no configuration is loaded.
const ReasonNoConfig = "the controller has no valid configuration loaded yet"

// State is the live state admission judges against: the pipeline of the
// configuration in use and the stores the informers fill.
type State struct {
	// Pipeline is built from the configuration in use.
	Pipeline *dryrun.Pipeline
	// Stores are the actual stores, by store key.
	Stores map[string]*store.Store
}

// Admitter decides requests against the current State. It is safe for
// concurrent use; the admission path takes no lock (the State is swapped
// atomically when the configuration changes).
//
// The Admitter sets no deadline of its own: a decision is bounded by the
// caller's ctx (the webhook Handler's, or the one htc check sets), and a
// caller that gives none waits for the checks' own bounds.
type Admitter struct {
	state atomic.Pointer[State]
	// Env builds the pipelines of proposed configurations.
	Env dryrun.Env
	// OwnConfig is the HAProxyTemplateConfig this controller uses. Config
	// judges only that one; any other is allowed with a warning that no
	// controller uses it. Zero judges every config (htc check).
	OwnConfig types.NamespacedName
	// Private are values that never leave in a decision besides the data of
	// Secrets, which is always redacted: the controller's environment
	// values, host name and temporary directories (see package redact).
	Private []string
	// PrivateWords are private values redacted only as whole words (the
	// host name, which may be short).
	PrivateWords []string
	// Log receives the details a decision does not show (nil discards).
	Log *slog.Logger
	// RevealLiveState shows the full reason of a proposed config that fails
	// over the current resources. Off in the webhook, where the requester
	// may not be allowed to read those resources; on in htc check, where
	// the requester supplied them.
	RevealLiveState bool

	// WatchNamespaces are the namespaces the informers watch (empty: all).
	// A change of an object in another namespace is in no store, so it is
	// allowed without a check, as one outside every label selector is.
	WatchNamespaces []string

	// MaxInFlight bounds the checks that run at once (each renders and
	// checks the whole configuration); zero means the number of CPUs. A
	// request that cannot start its check in time to finish before its
	// ctx's deadline is denied at once with ReasonBusy.
	MaxInFlight int

	redactors redactors
	baseline  atomic.Pointer[Baseline]
	slots     slots
	repeats   atomic.Pointer[repeats]
}

// SetState replaces the state decisions are made against.
func (a *Admitter) SetState(st *State) { a.state.Store(st) }

// State returns the current state (nil before the first SetState).
func (a *Admitter) State() *State { return a.state.Load() }

// Resource decides a change of a watched resource: the configuration is
// rendered over the actual stores with the change applied and checked. A
// change that alters no store (e.g. outside every label selector), or
// that alters no field the templates read (e.g. labels no template reads),
// is allowed without a check. An identical request against the same live
// state is answered with the decision made for it (repeats).
func (a *Admitter) Resource(ctx context.Context, req Request) Decision {
	st := a.state.Load()
	var o outcome
	switch {
	case st == nil || st.Pipeline == nil:
		o = deny(phase.Render, ReasonNoConfig)
	case !a.watched(req):
		o = allow()
	default:
		base := a.Baseline(st)
		o = a.repeated().decide(ctx, a.repeatKey(st, base, req), st, base, func(ctx context.Context) outcome {
			return a.decideResource(ctx, st, base, req)
		})
	}
	return a.redacted(st, req, o).answer(ctx)
}

// repeated returns the Admitter's repeats, made on first use.
func (a *Admitter) repeated() *repeats {
	if r := a.repeats.Load(); r != nil {
		return r
	}
	a.repeats.CompareAndSwap(nil, &repeats{decided: lru.New(defaultRepeatEntries)})
	return a.repeats.Load()
}

// decideResource is Resource's decision, against the baseline base: what
// each store would see (none: allowed), a change no template reads
// (allowed, see rendersAlike), else a check slot (or busy) and the judge.
func (a *Admitter) decideResource(ctx context.Context, st *State, base *Baseline, req Request) outcome {
	changes, err := st.Pipeline.Model.StoreChanges(req.Change)
	if err != nil {
		return deny(phase.Render, err.Error())
	}
	if len(changes) == 0 {
		return allow()
	}
	if st.Pipeline.RendersAlike(st.Stores, changes) {
		return a.rendersAlike(base)
	}
	stores, changed, err := watched.Apply(store.ReadOnly(st.Stores), changes)
	if err != nil {
		return deny(phase.Render, err.Error())
	}
	release, ok := a.slots.acquire(ctx, a.MaxInFlight)
	if !ok {
		return busy()
	}
	defer release()
	refs := changedRefs(req, changed)
	return a.judge(ctx, base, proposal{
		pipeline: st.Pipeline, stores: stores, changed: refs, deleted: deletedRef(req, refs),
		action: resourceAdmission(st.Pipeline.Model, changed),
	})
}

// rendersAlike admits a change that leaves every field the templates read
// as it is (see dryrun.Pipeline.RendersAlike): the configuration renders
// exactly as before, so the change introduces nothing and needs no check.
// What was failing before is still failing; it is a warning, as for any
// other change.
func (a *Admitter) rendersAlike(base *Baseline) outcome {
	o := allow(existingWarnings(base.failures())...)
	o.Existing = base.failures()
	o.RendersAlike = true
	return o
}

// watched reports whether the object req changes is in a watched namespace
// (a cluster-scoped object always is).
func (a *Admitter) watched(req Request) bool {
	if len(a.WatchNamespaces) == 0 {
		return true
	}
	obj := req.Object
	if obj == nil {
		obj = req.OldObject
	}
	if obj == nil || obj.GetNamespace() == "" {
		return true
	}
	return slices.Contains(a.WatchNamespaces, obj.GetNamespace())
}

// Config decides a proposed HAProxyTemplateConfig: it is decoded and
// validated (denied with its field errors), built into a pipeline, rendered
// over the actual stores it would watch (a resource the current config does
// not watch the same way starts empty), checked and its embedded tests run.
// A DELETE is allowed, and so is a config this controller does not use
// (with a warning). When the proposed config fails over the current
// resources, the reason says where but not what (see hideLiveStateDetails),
// and so does the log: htc check over the same state shows the details.
func (a *Admitter) Config(ctx context.Context, req Request) Decision {
	st := a.state.Load()
	return a.redacted(st, req, a.config(ctx, req)).answer(ctx)
}

// config is Config's decision, over the state in use once the check slot
// is taken.
func (a *Admitter) config(ctx context.Context, req Request) outcome {
	if req.Object == nil {
		return allow()
	}
	if name := (types.NamespacedName{Namespace: req.Object.GetNamespace(), Name: req.Object.GetName()}); a.OwnConfig.Name != "" && name != a.OwnConfig {
		return allow(fmt.Sprintf("HAProxyTemplateConfig %s is not checked: no htc controller uses it (this one uses %s)", name, a.OwnConfig))
	}
	cfg, err := config.FromUnstructured(req.Object)
	if err != nil {
		return deny(phase.Config, err.Error())
	}
	p, err := dryrun.Build(cfg, a.Env)
	if err != nil {
		if ic, ok := errors.AsType[*dryrun.InvalidConfigError](err); ok {
			return deny(phase.Config, ic.Error())
		}
		return deny(phase.Render, phase.Reason(err))
	}
	release, ok := a.slots.acquire(ctx, a.MaxInFlight)
	if !ok {
		return busy()
	}
	defer release()
	st := a.state.Load()
	base := a.Baseline(st)
	if base != nil {
		base = base.movedTo(p.Model)
	}
	o := a.judge(ctx, base, proposal{pipeline: p, stores: a.storesFor(p), action: configAdmission(st, cfg)})
	if a.RevealLiveState {
		return o
	}
	hidden := hideLiveStateDetails(o)
	if hidden.Reason != o.Reason {
		// The details stay out of the log too: a template can slice any
		// object's data into them, past what redaction recognises.
		a.logger().Warn("a proposed HAProxyTemplateConfig fails over the current resources",
			"namespace", req.Object.GetNamespace(), "name", req.Object.GetName(), "phase", string(o.Phase),
			"reason", hidden.Reason)
	}
	return hidden
}

// configAdmission is how changes of the config are admitted: as the
// config in use says (a proposed config cannot choose to be only warned
// about), or, before any config is in use, as the proposed one says.
func configAdmission(st *State, proposed *config.HAProxyTemplateConfig) watched.Admission {
	action := proposed.Spec.ConfigValidationAction
	if st != nil && st.Pipeline != nil {
		action = st.Pipeline.Config.Spec.ConfigValidationAction
	}
	if action == config.ValidationWarn {
		return watched.AdmissionWarn
	}
	return watched.AdmissionDeny
}

func (a *Admitter) logger() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// storesFor returns, for each resource p watches, the actual store of the
// current configuration that watches it the same way (resource, label
// selector, index), or an empty store.
func (a *Admitter) storesFor(p *dryrun.Pipeline) store.Set {
	actual := map[any]*store.Store{}
	if st := a.state.Load(); st != nil && st.Pipeline != nil {
		for _, r := range st.Pipeline.Model.All() {
			if s := st.Stores[r.Key]; s != nil {
				actual[r.WatchKey()] = s
			}
		}
	}
	empty := p.Model.NewStores()
	out := make(store.Set, len(empty))
	for _, r := range p.Model.All() {
		if s, ok := actual[r.WatchKey()]; ok {
			out[r.Key] = s
		} else {
			out[r.Key] = empty[r.Key]
		}
	}
	return out
}

// busy denies a change the controller could not check in time.
func busy() outcome {
	o := deny("", ReasonBusy)
	o.Busy = true
	return o
}
