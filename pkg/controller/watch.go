package controller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

// watchSpec identifies what one informer watches and how its store indexes:
// two watched resources with equal specs can share an informer and a store
// across config reloads.
type watchSpec struct {
	gvr      schema.GroupVersionResource
	selector string // labels.Selector.String(), "" for everything
	indexBy  string // the indexBy expressions joined by NUL
}

func specFor(w config.WatchedResource) (watchSpec, error) {
	gvr, err := w.GroupVersionResource()
	if err != nil {
		return watchSpec{}, err
	}
	sel := ""
	if w.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(w.LabelSelector)
		if err != nil {
			return watchSpec{}, fmt.Errorf("labelSelector: %w", err)
		}
		sel = s.String()
	}
	return watchSpec{gvr: gvr, selector: sel, indexBy: strings.Join(w.IndexBy, "\x00")}, nil
}

func (s watchSpec) String() string {
	out := s.gvr.Resource + "." + s.gvr.Version
	if s.gvr.Group != "" {
		out += "." + s.gvr.Group
	}
	if s.selector != "" {
		out += " (" + s.selector + ")"
	}
	return out
}

// watcher is one running dynamic informer feeding one store.
type watcher struct {
	spec   watchSpec
	store  *store.Store
	synced cache.InformerSynced
	cancel context.CancelFunc
	done   chan struct{}
}

// startWatcher starts an informer for spec (cluster-wide, filtered by the
// label selector) that fills a new store indexed by indexBy. changed, when
// set, is called after every change the store took (not for resyncs).
func startWatcher(ctx context.Context, client dynamic.Interface, spec watchSpec, indexBy []string, changed func(), log *slog.Logger) (*watcher, error) {
	st, err := store.New(indexBy)
	if err != nil {
		return nil, err
	}
	selector := spec.selector
	inf := dynamicinformer.NewFilteredDynamicInformer(client, spec.gvr, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	log = log.With("resource", spec.String())
	sink := &storeSink{store: st, log: log, changed: changed}
	reg, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sink.add,
		UpdateFunc: sink.update,
		DeleteFunc: sink.delete,
	})
	if err != nil {
		return nil, err
	}
	_ = inf.Informer().SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Warn("watch failed, retrying", "error", err)
	})
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{spec: spec, store: st, cancel: cancel, done: make(chan struct{})}
	w.synced = func() bool { return inf.Informer().HasSynced() && reg.HasSynced() }
	go func() {
		defer close(w.done)
		inf.Informer().RunWithContext(wctx)
	}()
	return w, nil
}

// stop stops the informer and waits until it returned.
func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// storeSink applies informer events to a store and reports each change.
type storeSink struct {
	store   *store.Store
	log     *slog.Logger
	changed func() // nil: nobody listens
}

func (s *storeSink) notify() {
	if s.changed != nil {
		s.changed()
	}
}

func (s *storeSink) add(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if err := s.store.Add(u); err != nil {
		s.log.Warn("object not stored", "namespace", u.GetNamespace(), "name", u.GetName(), "error", err)
		return
	}
	s.notify()
}

func (s *storeSink) update(oldObj, newObj any) {
	old, ok1 := oldObj.(*unstructured.Unstructured)
	u, ok2 := newObj.(*unstructured.Unstructured)
	if !ok2 {
		return
	}
	if ok1 && old.GetResourceVersion() != "" && old.GetResourceVersion() == u.GetResourceVersion() {
		return // a resync: nothing changed
	}
	if err := s.store.Update(u); err != nil {
		s.log.Warn("object not stored", "namespace", u.GetNamespace(), "name", u.GetName(), "error", err)
		return
	}
	s.notify()
}

func (s *storeSink) delete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		_ = s.store.Delete(u)
		s.notify()
	}
}

// watchPlan maps each store key of a config to its watch spec.
func watchPlan(spec *config.HAProxyTemplateConfigSpec) (map[string]watchSpec, error) {
	plan := make(map[string]watchSpec, len(spec.WatchedResources))
	for _, key := range slices.Sorted(maps.Keys(spec.WatchedResources)) {
		ws, err := specFor(spec.WatchedResources[key])
		if err != nil {
			return nil, fmt.Errorf("spec.watchedResources[%s]: %w", key, err)
		}
		plan[key] = ws
	}
	return plan, nil
}
