package informer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Prepared watchers are the stores a proposed config is judged over where
// the stores in use do not hold what it reads (admission.Source): another
// resource, selector or index, or fields they do not keep. The first
// admission of such a config starts, for each such resource, the watcher
// the config will have once applied (Start: its selectors, namespaces,
// index and Keep) and waits for it to sync until its deadline. The
// watcher goes on (listing, then watching), so that the next admission of
// the config (the retry a denial asks for, kubectl apply after its dry
// run) finds its store synced and current; when the config is applied,
// the config loop adopts it (Take) instead of listing again. A watcher no
// admission used for preparedTTL stops, and one that listed stops at the
// controller's next idle memory return (StopListed), its store garbage
// at once (its expiry timer reaches it weakly); at most preparedMax run at
// once (a new one stops the least recently used).
const (
	preparedTTL = 5 * time.Minute
	preparedMax = 4
)

// StartFunc starts a watcher of r pruned to keep, whose store changes
// call changed (Start with the controller's client and namespaces).
type StartFunc func(ctx context.Context, r watched.Resource, keep *watched.Keep, changed func()) (*Watcher, error)

// Prepared are the controller's prepared watchers: the admission.Source of
// its config admissions. Safe for concurrent use.
type Prepared struct {
	start StartFunc
	// trigger is called for every change of an adopted watcher's store
	// (the live loop's).
	trigger func()
	log     *slog.Logger

	// afterFunc starts a watcher's expiry (time.AfterFunc; tests record
	// the function instead).
	afterFunc func(time.Duration, func()) expiry

	mu    sync.Mutex
	ctx   context.Context // the config loop's (run); nil: not running
	byKey map[watched.WatchKey]*prepared
}

// expiry is a prepared watcher's timer (a *time.Timer).
type expiry interface {
	Stop() bool
	Reset(time.Duration) bool
}

// NewPrepared returns the prepared watchers that start watchers with
// start; once adopted (Take), a watcher's store changes call trigger.
func NewPrepared(start StartFunc, trigger func(), log *slog.Logger) *Prepared {
	return &Prepared{start: start, trigger: trigger, log: log,
		afterFunc: func(d time.Duration, f func()) expiry { return time.AfterFunc(d, f) }}
}

// prepared is one prepared watcher.
type prepared struct {
	w       *Watcher
	started time.Time
	used    time.Time
	expiry  expiry
	adopted atomic.Bool
}

// errNotRunning: no config loop runs the prepared watchers.
var errNotRunning = errors.New("the controller's watchers are not running")

// Run makes the watchers run under ctx (the config loop's) until ctx ends
// or StopAll.
func (ps *Prepared) Run(ctx context.Context) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.ctx = ctx
}

// Store returns the store of r's prepared watcher pruned to (at least)
// keep, once it synced: admission.ErrStillListing when ctx ends first
// (it goes on), or the list's error when the API server refuses it.
func (ps *Prepared) Store(ctx context.Context, r watched.Resource, keep *watched.Keep) (*store.Store, error) {
	p, err := ps.get(r, keep)
	if err != nil {
		return nil, err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !p.w.synced() {
		if err := p.w.listError(); refused(err) {
			ps.drop(r.WatchKey(), p) // the next admission starts afresh (after RBAC or the CRD is fixed)
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, admission.ErrStillListing
		case <-tick.C:
		}
	}
	return p.w.store, nil
}

// get returns r's prepared watcher keeping at least keep, started now
// unless one runs.
func (ps *Prepared) get(r watched.Resource, keep *watched.Keep) (*prepared, error) {
	k := r.WatchKey()
	var stop []*Watcher
	defer func() {
		for _, w := range stop {
			w.Stop()
		}
	}()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ctx == nil || ps.ctx.Err() != nil {
		return nil, errNotRunning
	}
	if p, ok := ps.byKey[k]; ok {
		if p.w.keep.Covers(keep) {
			p.used = time.Now()
			p.expiry.Reset(preparedTTL)
			return p, nil
		}
		stop = append(stop, ps.removeLocked(k)) // it keeps less: replaced
	}
	if len(ps.byKey) >= preparedMax {
		stop = append(stop, ps.removeLocked(ps.leastRecentlyUsedLocked()))
	}
	p := &prepared{started: time.Now(), used: time.Now()}
	w, err := ps.start(ps.ctx, r, keep, func() {
		if p.adopted.Load() {
			ps.trigger()
		}
	})
	if err != nil {
		return nil, err
	}
	p.w = w
	// The expiry reaches p weakly: a stopped timer can keep its function
	// until the time it was set for (Go's timers leave a stopped one in
	// the heap of timers until it comes up there or enough others were
	// stopped), and p's watcher holds a store as large as the stores in
	// use. A p gone is one removed (StopListed, Take, replaced): nothing
	// to drop.
	wp := weak.Make(p)
	p.expiry = ps.afterFunc(preparedTTL, func() {
		if p := wp.Value(); p != nil {
			ps.drop(k, p)
		}
	})
	go func() { // what the list costs, for the log
		if cache.WaitForCacheSync(w.done, w.synced) {
			ps.log.Info("listed for the admission of a proposed config", "resource", k.String(),
				"objects", w.store.Len(), "duration", time.Since(p.started).Round(time.Millisecond))
		}
	}()
	if ps.byKey == nil {
		ps.byKey = map[watched.WatchKey]*prepared{}
	}
	ps.byKey[k] = p
	ps.log.Info("listing for the admission of a proposed config", "resource", k.String(), "keep", keep.String())
	return p, nil
}

// Take hands the prepared watcher of k over to the caller (the config
// loop, applying the config it was prepared for) when it keeps at least
// keep; nil when there is none.
func (ps *Prepared) Take(k watched.WatchKey, keep *watched.Keep) *Watcher {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.byKey[k]
	if !ok || !p.w.keep.Covers(keep) {
		return nil
	}
	delete(ps.byKey, k)
	p.expiry.Stop()
	p.adopted.Store(true)
	return p.w
}

// drop stops p, k's prepared watcher, unless it was replaced or adopted.
func (ps *Prepared) drop(k watched.WatchKey, p *prepared) {
	ps.mu.Lock()
	if ps.byKey[k] != p {
		ps.mu.Unlock()
		return
	}
	w := ps.removeLocked(k)
	ps.mu.Unlock()
	w.Stop()
}

// StopAll stops every prepared watcher (the config loop ends).
func (ps *Prepared) StopAll() {
	ps.mu.Lock()
	var stop []*Watcher
	for k := range ps.byKey {
		stop = append(stop, ps.removeLocked(k))
	}
	ps.ctx = nil
	ps.mu.Unlock()
	for _, w := range stop {
		w.Stop()
	}
}

// removeLocked removes k's prepared watcher and returns it, to be
// stopped once ps.mu is released.
func (ps *Prepared) removeLocked(k watched.WatchKey) *Watcher {
	p := ps.byKey[k]
	delete(ps.byKey, k)
	p.expiry.Stop()
	return p.w
}

// StopListed stops every prepared watcher that listed (synced) and was
// not adopted, and returns how many it stopped: the controller calls it
// at an idle memory return (no admission ran in the quiet period before
// it), so that their stores, as large as the stores in use for the
// resources they list, are returned with the rest of the idle memory
// instead of kept preparedTTL. The next admission of their config lists
// again (at 10,000 HTTPRoutes, about 3.4 s of its deadline). One still
// listing goes on: an admission waits for it.
func (ps *Prepared) StopListed() int {
	ps.mu.Lock()
	var stop []*Watcher
	for k, p := range ps.byKey {
		if p.w.synced() {
			stop = append(stop, ps.removeLocked(k))
		}
	}
	ps.mu.Unlock()
	for _, w := range stop {
		w.Stop()
	}
	return len(stop)
}

// Len is how many prepared watchers run.
func (ps *Prepared) Len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.byKey)
}

// leastRecentlyUsedLocked is the key of the prepared watcher used last
// the longest ago.
func (ps *Prepared) leastRecentlyUsedLocked() watched.WatchKey {
	var oldest watched.WatchKey
	var at time.Time
	for k, p := range ps.byKey {
		if at.IsZero() || p.used.Before(at) {
			oldest, at = k, p.used
		}
	}
	return oldest
}

// refused reports whether err is the API server's lasting refusal to list
// (forbidden, unauthorized, no such resource), which retrying does not
// mend; other errors the informer retries.
func refused(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) || meta.IsNoMatchError(err))
}
