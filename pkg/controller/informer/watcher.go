package controller

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// watcher is the running dynamic informers (one, or one per watched
// namespace) feeding one store.
type watcher struct {
	store *store.Store
	// keep is what the store keeps of each object (nil: all of it).
	keep   *watched.Keep
	synced cache.InformerSynced
	cancel context.CancelFunc
	done   chan struct{}
	sink   *storeSink
}

// listError is the last error listing or watching returned (nil: none
// yet); the informers retry.
func (w *watcher) listError() error {
	if e := w.sink.failure.Load(); e != nil {
		return *e
	}
	return nil
}

// startWatcher starts informers for r, filtered by its label and field
// selectors, that fill a new store indexed as r says: one cluster-wide, or,
// when namespaces is not empty, one per namespace (r must then be
// namespaced).
// Every object is pruned to keep before it is stored (watched.Keep).
// changed, when set, is called after every change the store took (not for
// resyncs), but for the updates alike (when set) finds render alike
// (updateAlike): those call stored instead, and those of an object's
// status only: those call its settled, when set.
func startWatcher(ctx context.Context, client dynamic.Interface, r watched.Resource, namespaces []string, keep *watched.Keep, changed func(), alike *alikeUpdates, log *slog.Logger) (*watcher, error) {
	st, err := store.New(r.IndexBy)
	if err != nil {
		return nil, err
	}
	key := r.WatchKey()
	log = log.With("resource", key.String())
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	wctx, cancel := context.WithCancel(ctx)
	var synced []cache.InformerSynced
	var running sync.WaitGroup
	sink := &storeSink{store: st, keep: keep, log: log, changed: changed, alike: alike}
	w := &watcher{store: st, keep: keep, cancel: cancel, done: make(chan struct{}), sink: sink}
	for _, ns := range namespaces {
		s, err := runInformer(wctx, client, key, ns, sink, &running)
		if err != nil {
			cancel()
			running.Wait()
			return nil, err
		}
		synced = append(synced, s)
	}
	w.synced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	go func() {
		running.Wait()
		close(w.done)
	}()
	return w, nil
}

// runInformer runs, until ctx ends, an informer of key's resource in
// namespace ns (NamespaceAll: every namespace) that feeds sink; running
// counts it. The function it returns says whether the informer and its
// handler synced.
func runInformer(ctx context.Context, client dynamic.Interface, key watched.WatchKey, ns string, sink *storeSink, running *sync.WaitGroup) (cache.InformerSynced, error) {
	// One table per informer: its list and its watch share parts alike.
	transform := sink.keep.SharingTransform(watched.NewShareTable(0))
	lw := prunedListWatch(client.Resource(key.GVR).Namespace(ns), key, transform)
	// Since client-go v0.35 an informer lists by a streaming watch
	// (WatchListClient) where the API server serves one (kube-apiserver
	// 1.34 does), each object pruned by the transform as it arrives, and
	// falls back to lw's paged list otherwise. A client that cannot stream
	// (the fake dynamic client of unit tests) says so, and is listed.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &unstructured.Unstructured{}, 0, cache.Indexers{})
	log := sink.log
	if ns != metav1.NamespaceAll {
		log = log.With("namespace", ns)
	}
	// The stores keep no managedFields, no last-applied copy and no field
	// the templates cannot read (see watched.Keep), and one copy of the
	// small parts objects have alike (watched.ShareTable): set before the
	// informer runs, it applies to every object the informer caches, which
	// is most of the controller's memory.
	if err := inf.SetTransform(transform); err != nil {
		return nil, err
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sink.add,
		UpdateFunc: sink.update,
		DeleteFunc: sink.delete,
	})
	if err != nil {
		return nil, err
	}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Warn("watch failed, retrying", "error", err)
		sink.failure.Store(&err)
	})
	running.Go(func() { inf.RunWithContext(ctx) })
	return func() bool { return inf.HasSynced() && reg.HasSynced() }, nil
}

// stop stops the informers and waits until they returned.
func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// storeSink applies informer events to a store and reports each change.
type storeSink struct {
	store   *store.Store
	keep    *watched.Keep
	log     *slog.Logger
	changed func() // nil: nobody listens
	// alike tells the updates that change no field the templates read
	// (nil: none do).
	alike *alikeUpdates
	// failure is the last error listing or watching returned.
	failure atomic.Pointer[error]
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
	alike := s.alike.renderAlike(s.store, u)
	if err := s.store.Update(u); err != nil {
		s.log.Warn("object not stored", "namespace", u.GetNamespace(), "name", u.GetName(), "error", err)
		return
	}
	if alike {
		s.alike.storedAlike()
		return
	}
	if ok1 && s.alike.storedSettled(old, u) {
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
