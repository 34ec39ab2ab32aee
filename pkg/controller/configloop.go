package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
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
	defer func() {
		<-done
		for _, w := range c.watchers {
			w.stop()
		}
	}()
	log.Info("waiting for the HAProxyTemplateConfig")
	for {
		select {
		case <-ctx.Done():
			return
		case <-latest.ch:
		}
		if u := latest.take(); u != nil {
			c.apply(ctx, u, latest, log)
		}
	}
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
	fail := func(result, msg string, err error, args ...any) {
		c.metrics.reloads.WithLabelValues(result).Inc()
		log.Error(msg, append(args, "error", err)...)
		kept := "no configuration is served yet"
		if c.applied != nil {
			log.Warn("keeping the last good configuration", "resourceVersion", c.applied.ResourceVersion)
			kept = "the last good configuration (resourceVersion " + c.applied.ResourceVersion + ") keeps serving"
		}
		c.status.warn(u, "ConfigNotApplied", fmt.Sprintf("%s: %v; %s", msg, err, kept))
	}
	cfg, err := config.FromUnstructured(u)
	if err != nil {
		fail("invalid", "the HAProxyTemplateConfig does not decode", err)
		return
	}
	if errs := validation.Validate(cfg); len(errs) > 0 {
		fail("invalid", "the HAProxyTemplateConfig is invalid", errs.ToAggregate())
		return
	}
	if c.applied != nil && c.applied.Spec.Hash() == cfg.Spec.Hash() {
		log.Debug("the HAProxyTemplateConfig changed outside its spec; nothing to reload")
		c.applied = cfg
		return
	}
	checker, err := c.checker(cfg.Spec.AllowedDirectives)
	if err != nil {
		fail("error", "creating the HAProxy checker", err)
		return
	}
	pipeline, err := dryrun.NewPipeline(cfg, checker, c.tempDir)
	if err != nil {
		fail("invalid", "building the pipeline", err)
		return
	}
	plan, err := watchPlan(&cfg.Spec)
	if err != nil {
		fail("invalid", "the watched resources are invalid", err)
		return
	}
	for key, spec := range plan {
		if _, ok := c.watchers[spec]; ok {
			continue
		}
		w, err := startWatcher(ctx, c.dyn, spec, cfg.Spec.WatchedResources[key].IndexBy, c.live.trigger, c.log)
		if err != nil {
			fail("error", "starting an informer", err, "store", key)
			return
		}
		log.Info("watching", "store", key, "resource", spec.String())
		c.watchers[spec] = w
	}
	if !c.waitSynced(ctx, plan, latest, log) {
		return
	}
	// Warm the test cache before the pipeline goes live, so no admission
	// pays for the tests (they depend on the config only, not the stores).
	start := time.Now()
	report, _, err := c.validator.Tests.Run(ctx, pipeline, dryrun.TestOptions{Workers: 1})
	switch {
	case err != nil:
		log.Warn("running the embedded validation tests failed", "error", err)
	case report.Err() != nil:
		log.Warn("the embedded validation tests of the live configuration fail; every admission will be denied", "reason", report.Err().Error())
	default:
		log.Info("embedded validation tests passed", "tests", report.Total, "duration", time.Since(start).Round(time.Millisecond))
	}

	state := &dryrun.State{Pipeline: pipeline, Stores: make(map[string]*store.Store, len(plan))}
	for key, spec := range plan {
		state.Stores[key] = c.watchers[spec].store
	}
	// The new state, the validators and the informers change together.
	c.validator.SetState(state)
	c.registry.Set(c.validators(&cfg.Spec, log))
	for spec, w := range c.watchers {
		if !inPlan(plan, spec) {
			log.Info("no longer watching", "resource", spec.String())
			w.stop()
			delete(c.watchers, spec)
		}
	}
	c.applied = cfg
	c.metrics.reloads.WithLabelValues("applied").Inc()
	// Render, check and publish the live configuration of the new config.
	// For the first config this happens before admissions are served: it
	// fills the checker's per-section parse cache, so the first admission
	// pays only for the section it changes.
	c.live.sync(ctx)
	if !c.synced.Swap(true) {
		c.metrics.ready.Set(1)
	}
	counts := make([]any, 0, 2*len(state.Stores))
	for key, s := range state.Stores {
		counts = append(counts, "store."+key, s.Len())
	}
	log.Info("configuration applied; serving admissions", append(counts, "gvks", c.registry.GVKs())...)
}

func inPlan(plan map[string]watchSpec, spec watchSpec) bool {
	for _, s := range plan {
		if s == spec {
			return true
		}
	}
	return false
}

// waitSynced waits until every informer of plan synced. It gives up (false)
// when ctx ends or a newer config is waiting, which is applied next.
func (c *controller) waitSynced(ctx context.Context, plan map[string]watchSpec, latest *latestObject, log *slog.Logger) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	nextLog := start.Add(10 * time.Second)
	for {
		var waiting []string
		for key, spec := range plan {
			if !c.watchers[spec].synced() {
				waiting = append(waiting, key)
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
