package informer

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

// Watcher is the running dynamic informers (one, or one per watched
// namespace) feeding one store.
type Watcher struct {
	store *store.Store
	// keep is what the store keeps of each object (nil: all of it).
	keep   *watched.Keep
	synced cache.InformerSynced
	cancel context.CancelFunc
	done   chan struct{}
	sink   *Sink
	// tables are the informers' share tables (one each; set by Start,
	// read-only after).
	tables []*watched.ShareTable
}

// Store is the store the informers fill.
func (w *Watcher) Store() *store.Store { return w.store }

// Keep is what the store keeps of each object (nil: all of it).
func (w *Watcher) Keep() *watched.Keep { return w.keep }

// ForgetShared makes the informers' share tables forget the parts they
// remember (watched.ShareTable.Forget): the controller calls it at an idle
// memory return. Safe for concurrent use.
func (w *Watcher) ForgetShared() {
	for _, t := range w.tables {
		t.Forget()
	}
}

// SharedParts is how many parts the informers' share tables remember.
func (w *Watcher) SharedParts() int {
	n := 0
	for _, t := range w.tables {
		n += t.Len()
	}
	return n
}

// Synced reports whether every informer listed and its handler took
// the list.
func (w *Watcher) Synced() bool { return w.synced() }

// listError is the last error listing or watching returned (nil: none
// yet); the informers retry.
func (w *Watcher) listError() error {
	if e := w.sink.failure.Load(); e != nil {
		return *e
	}
	return nil
}

// Start starts informers for r, filtered by its label and field
// selectors, that fill a new store indexed as r says: one cluster-wide, or,
// when namespaces is not empty, one per namespace (r must then be
// namespaced).
// Every object is pruned to keep before it is stored (watched.Keep).
// Every change the store took is told to updates (Sink).
func Start(ctx context.Context, client dynamic.Interface, r watched.Resource, namespaces []string, keep *watched.Keep, updates Updates, log *slog.Logger) (*Watcher, error) {
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
	sink := NewSink(st, updates, log)
	w := &Watcher{store: st, keep: keep, cancel: cancel, done: make(chan struct{}), sink: sink}
	for _, ns := range namespaces {
		table := watched.NewShareTable(0)
		w.tables = append(w.tables, table)
		s, err := runInformer(wctx, client, key, ns, keep, table, sink, &running)
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
// namespace ns (NamespaceAll: every namespace), pruning to keep and
// sharing parts through table, that feeds sink; running counts it. The
// function it returns says whether the informer and its handler synced.
func runInformer(ctx context.Context, client dynamic.Interface, key watched.WatchKey, ns string, keep *watched.Keep, table *watched.ShareTable, sink *Sink, running *sync.WaitGroup) (cache.InformerSynced, error) {
	// One table per informer: its list and its watch share parts alike.
	transform := keep.SharingTransform(table)
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
	reg, err := inf.AddEventHandler(sink)
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

// Stop stops the informers and waits until they returned.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// Updates is what a Sink tells of the changes its store took. Every field
// may be nil.
type Updates struct {
	// Changed is called after every change the store took (not for
	// resyncs), but for the updates below.
	Changed func()
	// RendersAlike reports whether u, an update of an object of s,
	// changes no field the templates read (nil: none is alike).
	RendersAlike func(s *store.Store, u *unstructured.Unstructured) bool
	// StoredAlike is called instead of Changed after such an update was
	// stored.
	StoredAlike func()
	// Settled, when set, is called instead of Changed for an update that
	// does not render alike and changed only the object's status
	// (statusonly.go).
	Settled func()
}

// Sink applies an informer's events to a store and tells its Updates of
// each change: the informer's cache.ResourceEventHandler. Updates that
// keep an object's resourceVersion (resyncs) are skipped.
type Sink struct {
	store   *store.Store
	log     *slog.Logger
	updates Updates
	// failure is the last error listing or watching returned.
	failure atomic.Pointer[error]
}

var _ cache.ResourceEventHandler = (*Sink)(nil)

// NewSink returns the sink of st that tells updates of every change,
// logging to log the objects st refuses.
func NewSink(st *store.Store, updates Updates, log *slog.Logger) *Sink {
	return &Sink{store: st, log: log, updates: updates}
}

func (s *Sink) changed() {
	if s.updates.Changed != nil {
		s.updates.Changed()
	}
}

// OnAdd stores obj.
func (s *Sink) OnAdd(obj any, _ bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if err := s.store.Add(u); err != nil {
		s.log.Warn("object not stored", "namespace", u.GetNamespace(), "name", u.GetName(), "error", err)
		return
	}
	s.changed()
}

// OnUpdate stores newObj unless it keeps oldObj's resourceVersion.
func (s *Sink) OnUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*unstructured.Unstructured)
	u, ok2 := newObj.(*unstructured.Unstructured)
	if !ok2 {
		return
	}
	if ok1 && old.GetResourceVersion() != "" && old.GetResourceVersion() == u.GetResourceVersion() {
		return // a resync: nothing changed
	}
	alike := s.updates.RendersAlike != nil && s.updates.RendersAlike(s.store, u)
	if err := s.store.Update(u); err != nil {
		s.log.Warn("object not stored", "namespace", u.GetNamespace(), "name", u.GetName(), "error", err)
		return
	}
	if alike {
		if s.updates.StoredAlike != nil {
			s.updates.StoredAlike()
		}
		return
	}
	if ok1 && s.updates.Settled != nil && statusOnly(old, u) {
		s.updates.Settled()
		return
	}
	s.changed()
}

// OnDelete removes obj from the store.
func (s *Sink) OnDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		_ = s.store.Delete(u)
		s.changed()
	}
}
