package controller

import (
	"context"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// watcher is one running dynamic informer feeding one store.
type watcher struct {
	store  *store.Store
	synced cache.InformerSynced
	cancel context.CancelFunc
	done   chan struct{}
}

// startWatcher starts an informer for r (cluster-wide, filtered by its
// label selector) that fills a new store indexed as r says. changed, when
// set, is called after every change the store took (not for resyncs).
func startWatcher(ctx context.Context, client dynamic.Interface, r watched.Resource, changed func(), log *slog.Logger) (*watcher, error) {
	st, err := store.New(r.IndexBy)
	if err != nil {
		return nil, err
	}
	key := r.WatchKey()
	inf := dynamicinformer.NewFilteredDynamicInformer(client, key.GVR, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = key.Selector })
	log = log.With("resource", key.String())
	// The stores keep no managedFields and no last-applied copy (see
	// watched.Trim): set before the informer runs, it applies to every
	// object the informer caches, which is most of the controller's memory.
	if err := inf.Informer().SetTransform(watched.Trim); err != nil {
		return nil, err
	}
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
	w := &watcher{store: st, cancel: cancel, done: make(chan struct{})}
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
