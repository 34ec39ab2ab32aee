package admission

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// DefaultTimeout bounds one decision (the requirements' ValidateDirect
// deadline of 5 s).
const DefaultTimeout = 5 * time.Second

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
type Admitter struct {
	state atomic.Pointer[State]
	// Env builds the pipelines of proposed configurations.
	Env dryrun.Env
	// Timeout bounds one decision; zero means DefaultTimeout.
	Timeout time.Duration
}

// SetState replaces the state decisions are made against.
func (a *Admitter) SetState(st *State) { a.state.Store(st) }

// State returns the current state (nil before the first SetState).
func (a *Admitter) State() *State { return a.state.Load() }

// Resource decides a change of a watched resource: the configuration is
// rendered over the actual stores with the change applied and checked. A
// change that alters no store (e.g. outside every label selector) is
// allowed without a check.
func (a *Admitter) Resource(ctx context.Context, req Request) Decision {
	st := a.state.Load()
	if st == nil || st.Pipeline == nil {
		return Deny(phase.Render, ReasonNoConfig)
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()
	stores, changed, err := st.Pipeline.Model.Overlay(store.ReadOnly(st.Stores), req.Change)
	if err != nil {
		return Deny(phase.Render, err.Error())
	}
	if len(changed) == 0 {
		return Allow()
	}
	return fromVerdict(st.Pipeline.Check(ctx, stores))
}

// Config decides a proposed HAProxyTemplateConfig: it is decoded and
// validated (denied with its field errors), built into a pipeline, rendered
// over the actual stores it would watch (a resource the current config does
// not watch the same way starts empty), checked and its embedded tests run.
// A DELETE is allowed.
func (a *Admitter) Config(ctx context.Context, req Request) Decision {
	if req.Object == nil {
		return Allow()
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()
	cfg, err := config.FromUnstructured(req.Object)
	if err != nil {
		return Deny(phase.Config, err.Error())
	}
	p, err := dryrun.Build(cfg, a.Env)
	if err != nil {
		if ic, ok := errors.AsType[*dryrun.InvalidConfigError](err); ok {
			return Deny(phase.Config, ic.Error())
		}
		return Deny(phase.Render, phase.Reason(err))
	}
	return fromVerdict(p.Check(ctx, a.storesFor(p)))
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

func (a *Admitter) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultTimeout
	}
	return a.Timeout
}
