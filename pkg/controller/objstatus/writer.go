package objstatus

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// Status write retry back-off after a failed write (an API error or a
// conflict).
const (
	minStatusRetry = time.Second
	maxStatusRetry = time.Minute
)

// Results of htc_resource_status_writes_total (the result label of
// Writer.Writes).
const (
	// Written: applied, the object's status differed.
	Written = "written"
	// Unchanged: the object's status already held the document.
	Unchanged = "unchanged"
	// Conflict: the object changed since the render read it; retried.
	Conflict = "conflict"
	// Gone: the object was deleted since the render.
	Gone = "gone"
	// Failed: the API server refused or was not reached; retried.
	Failed = "error"
	// Forbidden: RBAC does not let htc write this status; not retried.
	Forbidden = "forbidden"
	// Follower: a follower writes nothing.
	Follower = "not_leader"
)

// Batch is what one live round asks to be written: the status
// documents of its render, the stores that render read (the objects'
// current status is read from them at write time) and each store's
// resource.
type Batch struct {
	docs   []resourcestatus.Document
	stores map[string]*store.Store
	gvrs   map[string]schema.GroupVersionResource
}

// NewBatch is the batch of docs rendered from st.
func NewBatch(st *admission.State, docs []resourcestatus.Document) *Batch {
	b := &Batch{docs: docs, stores: st.Stores, gvrs: map[string]schema.GroupVersionResource{}}
	for _, r := range st.Pipeline.Model.All() {
		b.gvrs[r.Key] = r.GVR
	}
	return b
}

// Writer writes the status documents of the newest accepted
// live round to their objects (package resourcestatus): only on the
// leader, only what differs from the object's status in the store, with
// server-side apply (field manager "htc", force) on the status
// subresource and the resourceVersion of the object the render read as a
// precondition (a document rendered from an older object than the store
// holds is not written: Stale). It runs
// beside the live loop, so that writing many objects never delays a
// publish; a newer batch replaces one being written. A failed write is
// retried with back-off (the whole newest batch: what is already there
// is not written again); a follower keeps the newest batch and writes it
// when it starts leading (Kick).
type Writer struct {
	// Client applies the status documents; set it before Run.
	Client dynamic.Interface
	// Writes counts the documents by result (Written, ...).
	Writes *prometheus.CounterVec
	// Collect, when set, runs a garbage collection (runtime.GC) before
	// a batch with at least collectBefore documents to write (see there).
	Collect func()
	// Stale, when set, is called after a pass that found a document
	// rendered from an object its store has since replaced (the informer
	// brought a newer one): such a document is not written (it would
	// overwrite what the newer object holds, another controller's entries
	// of a shared list), and Stale asks for a live round, whose batch is
	// rendered from the newer object. The controller sets the live loop's
	// trigger: a newer object that renders alike starts no round itself.
	Stale   func()
	leading func() bool
	log     *slog.Logger
	now     func() time.Time

	signal  chan struct{} // capacity 1: a batch is waiting
	mu      sync.Mutex
	pending *Batch // the newest batch (mu)
	gen     uint64 // incremented by offer (mu)
}

// New returns a Writer applying through dyn when leading says so, its
// counter registered with reg.
func New(dyn dynamic.Interface, leading func() bool, reg prometheus.Registerer, log *slog.Logger) *Writer {
	w := &Writer{Client: dyn, leading: leading, log: log, now: time.Now, signal: make(chan struct{}, 1),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_resource_status_writes_total",
			Help: "Status documents of spec.resourceStatus by what became of them: written (applied), unchanged (the object already said so), conflict (the object changed since the render; retried), gone (deleted since), error (retried), forbidden (RBAC does not grant patch on the status; not retried), not_leader (a follower writes nothing).",
		}, []string{"result"})}
	reg.MustRegister(w.Writes)
	return w
}

// Offer makes b the batch to write (nil: nothing) and wakes the writer. It
// never blocks.
func (w *Writer) Offer(b *Batch) {
	w.mu.Lock()
	w.pending, w.gen = b, w.gen+1
	w.mu.Unlock()
	w.Kick()
}

// Kick wakes the writer to write the newest batch again (a new leader).
func (w *Writer) Kick() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// newest returns the newest batch and its generation.
func (w *Writer) newest() (*Batch, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending, w.gen
}

// Run writes batches until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.signal:
		case <-retry.C:
		}
		b, gen := w.newest()
		if b == nil || !w.write(ctx, b, gen) {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, minStatusRetry), maxStatusRetry)
		retry.Reset(backoff)
	}
}

// statusWriters is how many documents write writes at once. A write is
// a round trip to the API server; one at a time wrote about 25 documents
// a second at 10,000 HTTPRoutes (make bench-scale WORKLOAD=gateway), four
// about 20 on a loaded machine (each round trip about 200 ms), sixteen
// about 90 on a quiet one: enough in flight to reach statusQPS with round
// trips up to 160 ms. The status client's rate limit (statusQPS) stays
// the bound.
const statusWriters = 32

// write writes b's documents that differ from their objects, statusWriters
// at a time, and reports whether a write failed. It stops early when a
// newer batch arrives (the signal to write it is pending), this replica
// stops leading (the documents not written count as not_leader) or ctx
// ends.
func (w *Writer) write(ctx context.Context, b *Batch, gen uint64) (failed bool) {
	if w.Collect != nil && w.leading() && b.toWrite(collectBefore) >= collectBefore {
		w.Collect()
	}
	var next atomic.Int64 // the next document to write
	var failures, followers, stale atomic.Int64
	var wg sync.WaitGroup
	for range min(statusWriters, len(b.docs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, now := w.newest(); now != gen || ctx.Err() != nil {
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(b.docs) {
					return
				}
				if !w.leading() {
					// This document and those no writer took.
					followers.Add(1 + max(0, int64(len(b.docs))-next.Swap(int64(len(b.docs)))))
					return
				}
				result, isStale := w.writeOne(ctx, b, &b.docs[i])
				w.Writes.WithLabelValues(result).Inc()
				if result == Conflict || result == Failed {
					failures.Add(1)
				}
				if isStale {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := followers.Load(); n > 0 {
		w.Writes.WithLabelValues(Follower).Add(float64(n))
	}
	if stale.Load() > 0 && w.Stale != nil {
		w.Stale()
	}
	return failures.Load() > 0
}

// collectBefore is how many documents a batch must have to write for
// write to collect the garbage first (Writer.Collect). The objects its
// writes bring back through the informers (about a thousand HTTPRoutes a
// round at 10,000) then take the room of the round's render garbage,
// among pages the heap keeps anyway. Left to the next collection, which
// comes in the next round's render, that room is still taken when they
// arrive: they go to pages of their own, which the next render's garbage
// fills and leaves holding a few of them each, in use at rest
// (BenchmarkGatewayHeapAtRest). It runs here, beside the live loop, so
// that no publish waits for it; a batch of a few documents (a route
// changed) is not worth a collection of the whole heap.
const collectBefore = 256

// toWrite counts b's documents whose object (in its store) does not
// already have their status, up to limit.
func (b *Batch) toWrite(limit int) int {
	n := 0
	for i := range b.docs {
		d := &b.docs[i]
		s := b.stores[d.Store]
		if s == nil {
			continue
		}
		obj, ok := s.ByName(d.Namespace, d.Name)
		if !ok {
			continue
		}
		if have, _ := obj.Object["status"].(map[string]any); !resourcestatus.Satisfied(have, d.Status) {
			if n++; n >= limit {
				break
			}
		}
	}
	return n
}

// WriteTimeout bounds one status write (an object's here; the controller
// bounds the write of its config's condition alike).
const WriteTimeout = 10 * time.Second

// writeOne applies d to its object unless the object's status (as the
// store holds it) already satisfies it, and returns the result; stale
// reports a document not written because its store holds a newer object
// than the one it was rendered from (counted as a Conflict). The write's
// precondition is the resourceVersion the render read (d.ResourceVersion),
// never a newer one: a status rendered from an older object would replace
// what the newer one holds.
func (w *Writer) writeOne(ctx context.Context, b *Batch, d *resourcestatus.Document) (result string, stale bool) {
	s, gvr := b.stores[d.Store], b.gvrs[d.Store]
	if s == nil || gvr.Resource == "" {
		return Gone, false // the config changed since the render
	}
	obj, ok := s.ByName(d.Namespace, d.Name)
	if !ok {
		return Gone, false
	}
	have, _ := obj.Object["status"].(map[string]any)
	if resourcestatus.Satisfied(have, d.Status) {
		return Unchanged, false
	}
	if obj.GetResourceVersion() != d.ResourceVersion {
		w.log.Debug("status not written: the object changed since it was rendered; a round renders it again", "object", d.Object())
		return Conflict, true
	}
	status := resourcestatus.FillTransitionTimes(d.Status, have, w.now().UTC().Format(time.RFC3339))
	apply := resourcestatus.ApplyObject(d, status, d.ResourceVersion)
	ctx, cancel := context.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	_, err := w.Client.Resource(gvr).Namespace(d.Namespace).ApplyStatus(ctx, d.Name, apply,
		metav1.ApplyOptions{FieldManager: resourcestatus.FieldManager, Force: true})
	switch {
	case err == nil:
		w.log.Debug("status written", "object", d.Object())
		return Written, false
	case apierrors.IsConflict(err):
		w.log.Debug("status not written: the object changed since it was rendered; retrying", "object", d.Object())
		return Conflict, false
	case apierrors.IsNotFound(err):
		return Gone, false
	case apierrors.IsForbidden(err):
		// Retrying cannot help until an operator grants it: the next
		// render's batch tries again.
		w.log.Error("writing the status is forbidden: grant patch on the status subresource (chart: writeStatus: true on the watched resource); not retried",
			"object", d.Object(), "resource", gvr.GroupResource().String()+"/status", "error", err)
		return Forbidden, false
	default:
		w.log.Warn("writing the status failed; retrying", "object", d.Object(), "error", err)
		return Failed, false
	}
}
