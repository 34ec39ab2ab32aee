package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/controller/informer"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Updates that render alike. An informer update that changes no field the
// templates read (the controller's own status writes, mostly: no template
// of the Gateway library reads a Gateway's status) renders the bundle the
// stores rendered before it, so it is stored but starts no live round. It
// is the question admission's read-set skip asks
// (dryrun.Pipeline.RendersAlike: the object stays in its store under the
// same index keys and agrees with the stored one on every field the
// templates read), asked of the State in use, over the store the update
// goes to. What a round would still do for it is done: the status writer
// compares the newest status documents with the stores again (another
// writer may have changed a status the documents set), and package shadow
// checks the answer as an admission's (the read-set check: full renders
// with the object before and after), the skipped round counting toward
// --shortcut-check-every as a round would. Anything not known (no State, a
// store the State does not use yet, the read-set shortcut off) starts a
// round, as before.

// updates is what the watcher of watch key k tells the controller: every
// change starts a live round (trigger), but an update that renders alike
// (stored without a round) and one of an object's status only (a round
// after StatusDebounce: live.triggerSettled).
func (c *controller) updates(k watched.WatchKey) informer.Updates {
	return informer.Updates{
		Changed: c.live.trigger,
		RendersAlike: func(s *store.Store, u *unstructured.Unstructured) bool {
			return updateRendersAlike(c.admitter.State(), c.shadow, k, s, u)
		},
		StoredAlike: func() {
			c.metrics.LiveAlike.Inc()
			c.shadow.RoundSkipped()
			if c.objStatus != nil {
				c.objStatus.Kick()
			}
		},
		Settled: c.live.triggerSettled,
	}
}

// updateRendersAlike reports whether u, an update of an object of s (the
// store of watch key k), renders under st what s renders with the object
// it replaces, and offers it to the shadow checks when it does.
func updateRendersAlike(st *admission.State, checks *shadow.Verifier, k watched.WatchKey, s *store.Store, u *unstructured.Unstructured) bool {
	if st == nil || st.Pipeline == nil || s == nil || u == nil {
		return false
	}
	changes := map[string]store.Change{}
	var gvr schema.GroupVersionResource
	for _, r := range st.Pipeline.Model.All() {
		if r.WatchKey() != k {
			continue
		}
		if st.Stores[r.Key] != s {
			return false // a store the State does not use (yet)
		}
		changes[r.Key] = store.Change{Operation: store.Update, Object: u}
		gvr = r.GVR
	}
	if len(changes) == 0 || !st.Pipeline.RendersAlike(st.Stores, changes) {
		return false
	}
	if old, ok := s.ByName(u.GetNamespace(), u.GetName()); ok {
		checks.AdmittedAlike(st, admission.Request{Change: watched.Change{Resource: gvr, Operation: store.Update, Object: u, OldObject: old}})
	}
	return true
}
