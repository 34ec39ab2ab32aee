package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Source reads the objects of a watched resource from where the live
// stores are filled: the API server in the controller, the state
// manifests in htc check. A proposed config is judged over what it gives
// wherever no live store holds what the config reads (see storesFor).
type Source interface {
	// Store returns a store of the objects a store of r holds once a
	// config watching r is applied: every object of r.GVR that r's label
	// and field selectors admit (in the namespaces the controller
	// watches), trimmed (watched.Trim), pruned to keep (nil: whole) and
	// indexed as r says, as the informers store them. The store may be
	// shared and kept current (the controller's informers); the caller
	// only reads it. It returns within ctx's deadline, or fails.
	Store(ctx context.Context, r watched.Resource, keep *watched.Keep) (*store.Store, error)
}

// storesFor returns the stores p's config renders over once it is
// applied, by store key. For each resource p watches: the live store
// that watches it the same way (resource, selectors, index) when it keeps
// every field p reads of it (State.Kept covers p.Keep); otherwise a store
// filled with what a.Source lists, kept as p's informers will keep it
// (one list per watch, one proposal listing at a time). Never an empty
// store where objects exist, nor one narrower than p reads: when the
// objects cannot be listed it returns an *unlistedError, and the config
// is denied. listed are the stores it filled (their Secrets are redacted
// from the decision as the live stores' are).
func (a *Admitter) storesFor(ctx context.Context, st *State, p *dryrun.Pipeline) (stores store.Set, listed []*store.Store, err error) {
	lent := liveWatches(st)
	stores = make(store.Set, len(p.Model.Keys()))
	var toList []watched.Resource // one per watch key, in store-key order
	for _, r := range p.Model.All() {
		if l, ok := lent[r.WatchKey()]; ok && l.kept.Covers(p.Keep(r.WatchKey())) {
			stores[r.Key] = l.store
		} else if !containsWatch(toList, r.WatchKey()) {
			toList = append(toList, r)
		}
	}
	if len(toList) == 0 {
		return stores, nil, nil
	}
	release, ok := a.lists.acquire(ctx, 1, configCheck)
	if !ok {
		return nil, nil, &unlistedError{resource: toList[0], err: context.DeadlineExceeded}
	}
	defer release()
	for _, r := range toList {
		s, err := a.list(ctx, r, p.Keep(r.WatchKey()))
		if err != nil {
			return nil, nil, &unlistedError{resource: r, err: err}
		}
		listed = append(listed, s)
		for _, same := range p.Model.All() {
			if same.WatchKey() == r.WatchKey() {
				stores[same.Key] = s
			}
		}
	}
	return stores, listed, nil
}

// liveWatch is a live store and what it keeps of its objects.
type liveWatch struct {
	store *store.Store
	kept  *watched.Keep
}

// liveWatches returns st's stores by watch key, those State.Kept says
// what they keep of only.
func liveWatches(st *State) map[watched.WatchKey]liveWatch {
	out := map[watched.WatchKey]liveWatch{}
	if st == nil || st.Pipeline == nil {
		return out
	}
	for _, r := range st.Pipeline.Model.All() {
		s := st.Stores[r.Key]
		kept, known := st.Kept[r.Key]
		if s != nil && known {
			out[r.WatchKey()] = liveWatch{store: s, kept: kept}
		}
	}
	return out
}

func containsWatch(rs []watched.Resource, k watched.WatchKey) bool {
	for _, r := range rs {
		if r.WatchKey() == k {
			return true
		}
	}
	return false
}

// list returns the store a.Source gives of r, pruned to keep.
func (a *Admitter) list(ctx context.Context, r watched.Resource, keep *watched.Keep) (*store.Store, error) {
	if a.Source == nil {
		return nil, errNoSource
	}
	return a.Source.Store(ctx, r, keep)
}

// errNoSource: the Admitter has no Source to list from.
var errNoSource = errors.New("no source to list from")

// ErrStillListing is what a Source returns when the list it started does
// not finish within the deadline but goes on: the next admission of the
// config finds it.
var ErrStillListing = errors.New("still listing")

// unlistedError is a watched resource a proposed config reads otherwise
// than the live stores hold it, which could not be listed. Its message is
// the denial reason: one line saying what and what to do, without the
// list's own error (it can carry the API server's address); the
// controller logs that.
type unlistedError struct {
	resource watched.Resource
	err      error
}

func (e *unlistedError) Error() string {
	what := fmt.Sprintf("the proposed config could not be judged: it reads %s otherwise than the config in use, and listing them", e.resource.WatchKey())
	switch {
	case errors.Is(e.err, ErrStillListing):
		return what + " from the API server goes on after the admission deadline; apply it again in a moment"
	case errors.Is(e.err, context.DeadlineExceeded) || errors.Is(e.err, context.Canceled):
		return what + " from the API server did not finish before the admission deadline; apply it again"
	case apierrors.IsForbidden(e.err):
		return what + " is forbidden to the controller; grant its service account get, list and watch on them first"
	case apierrors.IsNotFound(e.err) || meta.IsNoMatchError(e.err):
		return what + " failed: the API server does not serve that resource; install its CRD first"
	case errors.Is(e.err, errNoSource):
		return what + " is not possible here"
	}
	return what + " from the API server failed (the controller's log says why); apply it again"
}

func (e *unlistedError) Unwrap() error { return e.err }
