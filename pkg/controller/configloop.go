package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/informer"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// configLoop watches the HAProxyTemplateConfig and applies each new version.
func (c *controller) configLoop(ctx context.Context) {
	latest := &latestObject{ch: make(chan struct{}, 1)}
	name := c.opts.ConfigName
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dyn, config.GroupVersion.WithResource(config.Resource),
		c.opts.ConfigNamespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	log := c.log.With("config", c.opts.ConfigNamespace+"/"+c.opts.ConfigName)
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { latest.set(obj) },
		UpdateFunc: func(_, obj any) { latest.set(obj) },
		DeleteFunc: func(any) {
			log.Warn("the HAProxyTemplateConfig was deleted; keeping the last good configuration")
		},
	})
	_ = inf.Informer().SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Warn("watching the HAProxyTemplateConfig failed, retrying", "error", err)
	})
	done := make(chan struct{})
	go func() { defer close(done); inf.Informer().RunWithContext(ctx) }()
	c.prepared.Run(ctx)
	defer func() {
		<-done
		c.prepared.StopAll()
		for _, w := range c.watchers {
			w.Stop()
		}
		for _, w := range c.retired {
			w.Stop()
		}
	}()
	log.Info("waiting for the HAProxyTemplateConfig")
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.relist:
			c.relistWhole(ctx, latest, log)
		case <-latest.ch:
		}
		if u := latest.take(); u != nil {
			c.apply(ctx, u, latest, log)
		}
	}
}

// askRelist asks the config loop to list every watched resource again
// (relistWhole); it never blocks.
func (c *controller) askRelist() {
	select {
	case c.relist <- struct{}{}:
	default:
	}
}

// relistWhole lists every watched resource of the config in use again
// where its store keeps less than the config's Keep says now, and
// switches to the new stores: after a prune mismatch (the prune shortcut
// is off, so Keep is whole objects) every store is listed again, whole.
// When a newer config arrives meanwhile (the condition the mismatch
// writes is one), it asks again: once that config is applied, the stores
// it started are switched to, unless the config's own switch did.
func (c *controller) relistWhole(ctx context.Context, latest *latestObject, log *slog.Logger) {
	st := c.admitter.State()
	if st == nil || st.Pipeline == nil || keepsEnough(st) {
		return
	}
	p := st.Pipeline
	log.Warn("listing every watched resource again, whole: a store's pruned objects rendered otherwise than the objects themselves")
	if err := c.startWatchers(ctx, p, log); err != nil {
		// The stores in use keep being fed; the next config change lists again.
		log.Error("listing again failed", "error", err)
		c.status.Event(p.Config, corev1.EventTypeWarning, "ListingFailed", fmt.Sprintf("listing the watched resources again, whole, failed: %v", err))
		return
	}
	if !c.waitSynced(ctx, p.Model, latest, log) {
		c.askRelist()
		return
	}
	c.switchTo(ctx, p, log)
}

// keepsEnough reports whether every store of st keeps what its config
// reads of it now (State.Kept covers dryrun.Pipeline.Keep).
func keepsEnough(st *admission.State) bool {
	for _, r := range st.Pipeline.Model.All() {
		if kept, ok := st.Kept[r.Key]; !ok || !kept.Covers(st.Pipeline.Keep(r.WatchKey())) {
			return false
		}
	}
	return true
}

// latestObject keeps only the newest object; ch signals that one is waiting.
type latestObject struct {
	mu  sync.Mutex
	obj *unstructured.Unstructured
	ch  chan struct{}
}

func (l *latestObject) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	l.mu.Lock()
	l.obj = u
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *latestObject) take() *unstructured.Unstructured {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.obj
	l.obj = nil
	return u
}

func (l *latestObject) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.obj != nil
}

// apply loads one version of the config. A config that does not decode,
// validate or build is logged and the last good one keeps serving.
func (c *controller) apply(ctx context.Context, u *unstructured.Unstructured, latest *latestObject, log *slog.Logger) {
	rv := u.GetResourceVersion()
	if rv != "" && rv == c.lastRV {
		return
	}
	c.lastRV = rv
	log = log.With("resourceVersion", rv)
	cfg, err := config.FromUnstructured(u)
	if err != nil {
		c.notApplied(u, log, "invalid", "the HAProxyTemplateConfig does not decode", err)
		return
	}
	if c.applied != nil && c.applied.Spec.Hash() == cfg.Spec.Hash() {
		log.Debug("the HAProxyTemplateConfig changed outside its spec; nothing to reload")
		c.applied = cfg
		return
	}
	pipeline, err := dryrun.Build(cfg, c.env)
	if err != nil {
		msg := "building the pipeline"
		if _, ok := errors.AsType[*dryrun.InvalidConfigError](err); ok {
			msg = "the HAProxyTemplateConfig is invalid"
		}
		c.notApplied(u, log, "invalid", msg, err)
		return
	}
	if err := c.startWatchers(ctx, pipeline, log); err != nil {
		c.notApplied(u, log, "error", "starting an informer", err)
		return
	}
	if !c.waitSynced(ctx, pipeline.Model, latest, log) {
		return
	}
	c.warmTests(ctx, pipeline, log)
	c.switchTo(ctx, pipeline, log)
}

// notApplied reports a config version that cannot be applied: a log line,
// the reload metric and a Warning Event saying what keeps serving.
func (c *controller) notApplied(u *unstructured.Unstructured, log *slog.Logger, result, msg string, err error) {
	c.metrics.Reloads.WithLabelValues(result).Inc()
	log.Error(msg, "error", err)
	kept := "no configuration is served yet"
	if c.applied != nil {
		log.Warn("keeping the last good configuration", "resourceVersion", c.applied.ResourceVersion)
		kept = "the last good configuration (resourceVersion " + c.applied.ResourceVersion + ") keeps serving"
	}
	c.status.Warn(u, "ConfigNotApplied", fmt.Sprintf("%s: %v; %s", msg, err, kept))
}

// startWatchers starts an informer for every resource of p's model no
// running informer serves yet, or serves pruned to fewer fields than p's
// templates read (dryrun.Pipeline.Keep), unless the admission of p's
// config started one already (a prepared watcher: it is adopted); the
// informer it replaces keeps feeding the stores in use until switchTo.
func (c *controller) startWatchers(ctx context.Context, p *dryrun.Pipeline, log *slog.Logger) error {
	for _, r := range p.Model.All() {
		key, keep := r.WatchKey(), p.Keep(r.WatchKey())
		old, ok := c.watchers[key]
		if ok && old.Keep().Covers(keep) {
			continue
		}
		w := c.prepared.Take(key, keep)
		if w != nil {
			log.Info("watching with the informer the config's admission started", "store", r.Key, "resource", key.String(), "keep", w.Keep().String())
		} else {
			namespaces, err := c.watchNamespaces(r.GVR)
			if err != nil {
				return fmt.Errorf("store %s: %w", r.Key, err)
			}
			if w, err = informer.Start(ctx, c.dyn, r, namespaces, keep, c.updates(key), c.log); err != nil {
				return fmt.Errorf("store %s: %w", r.Key, err)
			}
			if ok {
				log.Info("listing again: the configuration reads fields the store does not keep", "store", r.Key, "resource", key.String(), "keep", keep.String())
			} else {
				log.Info("watching", "store", r.Key, "resource", key.String(), "namespaces", namespaces, "keep", keep.String())
			}
		}
		if ok {
			c.retired = append(c.retired, old)
		}
		c.watchers[key] = w
	}
	return nil
}

// watchNamespaces returns the namespaces to watch gvr in: nil (all) for a
// cluster-scoped resource or when Options.WatchNamespaces is empty.
func (c *controller) watchNamespaces(gvr schema.GroupVersionResource) ([]string, error) {
	if len(c.opts.WatchNamespaces) == 0 {
		return nil, nil
	}
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("is %s namespaced: %w", watched.ResourceString(gvr), err)
	}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("is %s namespaced: %w", watched.ResourceString(gvr), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, nil
	}
	return c.opts.WatchNamespaces, nil
}

// warmTests runs the embedded tests before the pipeline goes live, so no
// admission pays for them (they depend on the config only, not the stores).
func (c *controller) warmTests(ctx context.Context, p *dryrun.Pipeline, log *slog.Logger) {
	start := time.Now()
	report, _, err := p.Tests(ctx)
	switch {
	case err != nil:
		log.Warn("running the embedded validation tests failed", "error", err)
	case report.Err() != nil:
		log.Warn("the embedded validation tests of the live configuration fail; every admission will be denied", "reason", report.Err().Error())
	default:
		log.Info("embedded validation tests passed", "tests", report.Total, "duration", time.Since(start).Round(time.Millisecond))
	}
}

// switchTo makes p the configuration in use: the admission state, the
// webhook validators and the informers change together; informers the new
// config does not use stop. Then the live configuration of the new config is
// rendered, checked and published. For the first config this happens before
// admissions are served: it fills the checker's per-section parse cache, so
// the first admission pays only for the section it changes.
func (c *controller) switchTo(ctx context.Context, p *dryrun.Pipeline, log *slog.Logger) {
	state := &admission.State{Pipeline: p, Stores: make(map[string]*store.Store, len(p.Model.Keys())),
		Kept: make(map[string]*watched.Keep, len(p.Model.Keys()))}
	used := map[watched.WatchKey]bool{}
	for _, r := range p.Model.All() {
		w := c.watchers[r.WatchKey()]
		state.Stores[r.Key], state.Kept[r.Key] = w.Store(), w.Keep()
		used[r.WatchKey()] = true
	}
	c.admitter.SetState(state)
	rules := c.rules(p.Model, log)
	c.registry.Set(c.validators(rules))
	for key, w := range c.watchers {
		if !used[key] {
			log.Info("no longer watching", "resource", key.String())
			w.Stop()
			delete(c.watchers, key)
		}
	}
	for _, w := range c.retired {
		w.Stop()
	}
	c.retired = nil
	inUse := make([]*informer.Watcher, 0, len(c.watchers))
	for _, w := range c.watchers {
		inUse = append(inUse, w)
	}
	c.inUse.Store(&inUse)
	c.applied = p.Config
	c.metrics.Reloads.WithLabelValues("applied").Inc()
	c.live.sync(ctx)
	if !c.synced.Load() {
		// The first config's lists, full render and full check leave
		// garbage of about twice what the controller keeps, which the
		// runtime would hand back to the OS only slowly: returned now,
		// before admissions are served, the pod's working set starts at
		// what the controller keeps (at 10,000 Ingresses, Services and
		// EndpointSlices: BENCHMARKS.md).
		debug.FreeOSMemory()
	}
	if !c.synced.Swap(true) {
		c.metrics.Ready.Set(1)
	}
	c.registration.SetRules(rules) // registered now that admissions are served
	counts := make([]any, 0, 2*len(state.Stores))
	for key, s := range state.Stores {
		counts = append(counts, "store."+key, s.Len())
	}
	log.Info("configuration applied; serving admissions", append(counts, "gvks", c.registry.GVKs(),
		"fragments", p.FragmentStats().Ran)...)
}

// waitSynced waits until every informer of plan synced. It gives up (false)
// when ctx ends or a newer config is waiting, which is applied next.
func (c *controller) waitSynced(ctx context.Context, model *watched.Model, latest *latestObject, log *slog.Logger) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	nextLog := start.Add(10 * time.Second)
	for {
		var waiting []string
		for _, r := range model.All() {
			if !c.watchers[r.WatchKey()].Synced() {
				waiting = append(waiting, r.Key)
			}
		}
		if len(waiting) == 0 {
			log.Info("stores synced", "duration", time.Since(start).Round(time.Millisecond))
			return true
		}
		if time.Now().After(nextLog) {
			log.Warn("still waiting for stores to sync", "stores", waiting)
			nextLog = time.Now().Add(10 * time.Second)
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if latest.pending() {
			log.Info("a newer configuration arrived while waiting for stores to sync")
			return false
		}
	}
}

// startPrepared starts a prepared watcher (informer.StartFunc): r's
// informers in the namespaces the controller watches, pruned to keep.
func (c *controller) startPrepared(ctx context.Context, r watched.Resource, keep *watched.Keep, changed func()) (*informer.Watcher, error) {
	namespaces, err := c.watchNamespaces(r.GVR)
	if err != nil {
		return nil, err
	}
	return informer.Start(ctx, c.dyn, r, namespaces, keep, informer.Updates{Changed: changed}, c.log)
}
