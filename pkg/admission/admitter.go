package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

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
	// Kept says what each store keeps of its objects, by store key
	// (watched.Keep; nil: whole objects): the controller's informers
	// prune them. A proposed config is judged over a live store only when
	// it keeps every field the config reads; a store without an entry is
	// never lent to a proposed config (its objects are listed from the
	// Admitter's Source).
	Kept map[string]*watched.Keep
}

// Admitter decides requests against the current State. It is safe for
// concurrent use; the admission path takes no lock (the State is swapped
// atomically when the configuration changes).
//
// The Admitter sets no deadline of its own: a decision is bounded by the
// caller's ctx (the webhook Handler's, or the one htc check and htc audit
// set, see the package doc's Deadlines), and a caller that gives none
// waits for the checks' own fixed bounds.
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

	// Source gives the stores of what a proposed config reads otherwise
	// than the live stores hold it (another resource, selector or index,
	// or fields the stores do not keep), under the request's deadline:
	// the informers the config will have in the controller, the state
	// manifests in htc check. Nil: such a config is denied, saying it
	// could not be judged.
	Source Source

	redactors redactors
	baseline  atomic.Pointer[Baseline]
	slots     slots
	lists     slots // one proposed config lists at a time (storesFor)
	repeats   atomic.Pointer[repeats]
}

// SetState replaces the state decisions are made against.
func (a *Admitter) SetState(st *State) { a.state.Store(st) }

// InFlight is the number of admission checks running now (each holds a
// check slot): the live loop defers its rounds while there are any, so
// that the checks users wait for get the CPU first.
func (a *Admitter) InFlight() int { return a.slots.inFlight() }

// State returns the current state (nil before the first SetState).
func (a *Admitter) State() *State { return a.state.Load() }

// Decide decides one request. It is the admission path's entry (see the
// package doc's map): the webhook's validators and htc check call it. A
// proposed HAProxyTemplateConfig is decided as a config (Config); any
// other request as a change of a watched resource: the configuration is
// rendered over the actual stores with the change applied and checked. A
// change that alters no store (e.g. outside every label selector), or
// that alters no field the templates read (e.g. labels no template reads),
// is allowed without a check. An identical request against the same live
// state is answered with the decision made for it (repeats).
//
// The Report says what the decision learned besides its answer; a caller
// that does not observe the path drops it.
func (a *Admitter) Decide(ctx context.Context, req Request) (Decision, Report) {
	if req.Resource.GroupResource() == configResource {
		return a.Config(ctx, req)
	}
	st := a.state.Load()
	var d Decision
	var r Report
	switch {
	case st == nil || st.Pipeline == nil:
		d = Deny(phase.Render, ReasonNoConfig)
	case !a.watched(req):
		d = Allow()
	default:
		base := a.Baseline(st)
		d, r = a.repeated().decide(ctx, a.repeatKey(st, base, req), st, base, func(ctx context.Context) (Decision, Report) {
			return a.decideResource(ctx, st, base, req)
		})
	}
	return a.redacted(st, req, d, r)
}

// configResource is the resource of HAProxyTemplateConfigs.
var configResource = config.GroupVersion.WithResource(config.Resource).GroupResource()

// repeated returns the Admitter's repeats, made on first use.
func (a *Admitter) repeated() *repeats {
	if r := a.repeats.Load(); r != nil {
		return r
	}
	a.repeats.CompareAndSwap(nil, newRepeats())
	return a.repeats.Load()
}

// decideResource is Decide's decision of a change of a watched resource, against the baseline base: what
// each store would see (none: allowed), a change no template reads
// (allowed, see rendersAlike), else a check slot (or busy) and the judge.
func (a *Admitter) decideResource(ctx context.Context, st *State, base *Baseline, req Request) (Decision, Report) {
	changes, err := st.Pipeline.Model.StoreChanges(req.Change)
	if err != nil {
		return Deny(phase.Render, err.Error()), Report{}
	}
	if len(changes) == 0 {
		return Allow(), Report{}
	}
	if st.Pipeline.RendersAlike(st.Stores, changes) {
		return a.rendersAlike(base)
	}
	stores, changed, err := watched.Apply(store.ReadOnly(st.Stores), changes)
	if err != nil {
		return Deny(phase.Render, err.Error()), Report{}
	}
	release, ok := a.slots.acquire(ctx, a.MaxInFlight, changeCheck)
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
func (a *Admitter) rendersAlike(base *Baseline) (Decision, Report) {
	return Allow(existingWarnings(base.failures())...), Report{Existing: base.failures(), RendersAlike: true}
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

// Config is Decide for a proposed HAProxyTemplateConfig: it is decoded and
// validated (denied with its field errors), built into a pipeline, rendered
// over the objects it will render once applied (the live stores where they
// hold what it reads, else what the Source lists: see storesFor), checked
// and its embedded tests run. Its render applies the live render's
// fragment records where the config leaves a fragment as it is
// (dryrun.Pipeline.CarryFrom).
// A DELETE is allowed, and so is a config this controller does not use
// (with a warning). When the proposed config fails over the current
// resources, the reason says where but not what (see hideLiveStateDetails),
// and so does the log: htc check over the same state shows the details.
func (a *Admitter) Config(ctx context.Context, req Request) (Decision, Report) {
	st := a.state.Load()
	d, r, listed := a.config(ctx, st, req)
	return a.redacted(st, req, d, r, listed...)
}

// proposedConfig decodes the HAProxyTemplateConfig req proposes: from
// the JSON the webhook handed on, else from the object.
func proposedConfig(req Request) (*config.HAProxyTemplateConfig, error) {
	if req.ObjectJSON != nil {
		return config.FromJSON(req.ObjectJSON)
	}
	return config.FromUnstructured(req.Object)
}

// config is Config's decision against the state st, and the stores it
// listed for it.
func (a *Admitter) config(ctx context.Context, st *State, req Request) (Decision, Report, []*store.Store) {
	if req.Object == nil {
		return Allow(), Report{}, nil
	}
	if name := (types.NamespacedName{Namespace: req.Object.GetNamespace(), Name: req.Object.GetName()}); a.OwnConfig.Name != "" && name != a.OwnConfig {
		return Allow(fmt.Sprintf("HAProxyTemplateConfig %s is not checked: no htc controller uses it (this one uses %s)", name, a.OwnConfig)), Report{}, nil
	}
	cfg, err := proposedConfig(req)
	if err != nil {
		return Deny(phase.Config, err.Error()), Report{}, nil
	}
	p, err := dryrun.Build(cfg, a.Env)
	if err != nil {
		if ic, ok := errors.AsType[*dryrun.InvalidConfigError](err); ok {
			return Deny(phase.Config, ic.Error()), Report{}, nil
		}
		return Deny(phase.Render, phase.Reason(err)), Report{}, nil
	}
	stores, listed, err := a.storesFor(ctx, st, p)
	if err != nil {
		a.logger().Warn("a proposed HAProxyTemplateConfig could not be judged: listing what it reads failed",
			"namespace", req.Object.GetNamespace(), "name", req.Object.GetName(), "error", errors.Unwrap(err))
		return Deny("", err.Error()), Report{}, nil
	}
	release, ok := a.slots.acquire(ctx, a.MaxInFlight, configCheck)
	if !ok {
		d, r := busy()
		return d, r, listed
	}
	defer release()
	base := a.Baseline(st)
	if base != nil {
		base = base.movedTo(p.Model)
	}
	if st != nil {
		p.CarryFrom(st.Pipeline)
	}
	d, r := a.judge(ctx, base, proposal{pipeline: p, stores: stores, action: configAdmission(st, cfg), hideLiveState: !a.RevealLiveState})
	if len(listed) == 0 {
		r.Proposed = p
	}
	if r.Hidden {
		// The details stay out of the log too: a template can slice any
		// object's data into them, past what redaction recognises.
		a.logger().Warn("a proposed HAProxyTemplateConfig fails over the current resources",
			"namespace", req.Object.GetNamespace(), "name", req.Object.GetName(), "phase", string(d.Phase),
			"reason", d.Reason)
	}
	return d, r, listed
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

// busy denies a change the controller could not check in time.
func busy() (Decision, Report) {
	return Deny("", ReasonBusy), Report{Busy: true}
}
