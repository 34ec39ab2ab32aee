package shadow

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// liveSample is an incremental render of the live state: the stores did
// not change while it rendered (their generations).
type liveSample struct {
	pipeline *dryrun.Pipeline
	stores   map[string]*store.Store
	gens     map[string]uint64
	bundle   *bundle.Bundle
	// pruneChecked reports that the sample's pruning was checked: one
	// check each, so that a controller at rest renders nothing (each
	// check is a full render, and the idle period after one would start
	// another). A flag of the sample, not a pointer to the last one
	// checked: that would keep an earlier render's bundle, and the
	// fragment records its source map holds, beside the newest.
	pruneChecked atomic.Bool
}

// Generations returns the generation of every store (store.Store's
// Generation): two equal results mean the stores held the same objects.
func Generations(stores map[string]*store.Store) map[string]uint64 {
	out := make(map[string]uint64, len(stores))
	for k, s := range stores {
		if s != nil {
			out[k] = s.Generation()
		}
	}
	return out
}

// LiveRendered is called after each live render with what it rendered:
// b, p's incremental render of stores, whose generations were gens before
// it started and still are. A nil b (the render failed: a failure never
// rests on replayed work), or stores that changed, only count the render.
// Every Every-th call triggers a check.
func (v *Verifier) LiveRendered(p *dryrun.Pipeline, stores map[string]*store.Store, gens map[string]uint64, b *bundle.Bundle) {
	if v == nil {
		return
	}
	if b != nil && p != nil && maps.Equal(gens, Generations(stores)) {
		s := &liveSample{pipeline: p, stores: stores, gens: gens, bundle: b}
		if v.opts.Switches.On(shortcut.Render) {
			v.live.Store(s)
		}
		v.published.Store(s)
	}
	v.countRound()
}

// RoundSkipped is called for an update that started no live round because
// it renders alike (its answer offered with AdmittedAlike first): it counts
// toward Every as a live render does, so that the checks of such answers
// come at the cadence of the rounds they stand for.
func (v *Verifier) RoundSkipped() {
	if v != nil {
		v.countRound()
	}
}

// countRound counts a live round (rendered or skipped); every Every-th
// triggers a check.
func (v *Verifier) countRound() {
	if n := v.renders.Add(1); v.opts.Every > 0 && n%uint64(v.opts.Every) == 0 {
		v.trigger()
	}
}

// checkRender renders the sample's state in full and compares it with the
// incremental render, byte for byte.
func (v *Verifier) checkRender(ctx context.Context, s *liveSample) (result, where string) {
	if !maps.Equal(s.gens, Generations(s.stores)) {
		return ResultStale, ""
	}
	full, err := s.pipeline.RenderFull(ctx, store.ReadOnly(s.stores))
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case !maps.Equal(s.gens, Generations(s.stores)):
		return ResultStale, ""
	case err != nil:
		// Not its reason: a template can put any object's data into it.
		return ResultMismatch, "the full render fails where the incremental one did not"
	case full.Hash() != s.bundle.Hash():
		return ResultMismatch, firstDifference(s.pipeline, full, s.bundle)
	case !reflect.DeepEqual(full.Status, s.bundle.Status):
		// Status documents are no file of the bundle (not in its hash);
		// fragments render them too.
		return ResultMismatch, "the status documents (resourceStatus) differ"
	}
	return ResultAgreed, ""
}

// admissionSample is an admission's incremental render of a proposal:
// the stores it rendered over (the live stores with the change in an
// overlay, without the objects its diagnosis hid), the generations of the
// live stores under them, and the hash of the bundle it produced. It holds
// no copy of the state.
type admissionSample struct {
	kind     shortcut.Kind // Render; Carry for a proposed config's
	pipeline *dryrun.Pipeline
	live     map[string]*store.Store
	gens     map[string]uint64
	stores   store.Set
	hash     string
	what     string // "the admission of Secret default/web-tls"
}

// AdmissionRendered is called for a request st's admission decided by
// verdict, whose check went as trace says; gens are the generations of st's stores before the admission
// started. When the verdict rendered a bundle (a failure never rests on
// replayed work), through the render shortcut, over stores that did not
// change meanwhile, the proposal is kept (a few at most) to be rendered
// again, in full.
func (v *Verifier) AdmissionRendered(st *admission.State, gens map[string]uint64, req admission.Request, verdict *dryrun.Verdict, trace dryrun.Trace) {
	if v == nil || st == nil || st.Pipeline == nil || verdict == nil || verdict.Bundle == nil || trace.Stores == nil ||
		!v.opts.Switches.On(shortcut.Render) || len(v.admitted) == cap(v.admitted) || !maps.Equal(gens, Generations(st.Stores)) {
		return
	}
	offer(v.admitted, &admissionSample{kind: shortcut.Render, pipeline: st.Pipeline, live: st.Stores, gens: gens, stores: trace.Stores,
		hash: verdict.BundleHash, what: "the admission of " + RequestObject(req)})
}

// ConfigAdmissionRendered is called for a proposed config st's admission
// decided as r says; gens are the generations of st's stores before the
// admission started. When its render applied records carried from the
// live render (r.Proposed's FragmentStats.Carried), rendered a bundle
// over the live stores alone (r.Proposed set), and the stores did not
// change meanwhile, the proposal is kept (with the admission samples) to
// be rendered again, in full, by the proposed config's pipeline.
func (v *Verifier) ConfigAdmissionRendered(st *admission.State, gens map[string]uint64, req admission.Request, r admission.Report) {
	p := r.Proposed
	if v == nil || st == nil || p == nil || r.Reused || r.Verdict == nil || r.Verdict.Bundle == nil || r.Trace.Stores == nil ||
		p.FragmentStats().Carried == 0 || !v.opts.Switches.On(shortcut.Carry) ||
		len(v.admitted) == cap(v.admitted) || !maps.Equal(gens, Generations(st.Stores)) {
		return
	}
	offer(v.admitted, &admissionSample{kind: shortcut.Carry, pipeline: p, live: st.Stores, gens: gens, stores: r.Trace.Stores,
		hash: r.Verdict.BundleHash, what: "the admission of " + RequestObject(req)})
}

// checkAdmission renders the sample's proposal in full, over the same
// live state, and compares the bundles' hashes: what the admission
// checked (its status documents, not in the hash, are never used). A live
// state that moved on (an admitted change is usually stored moments
// later) leaves nothing to compare: the overlays read the live stores as
// they are now.
func (v *Verifier) checkAdmission(ctx context.Context, s *admissionSample) (result, where string) {
	if !maps.Equal(s.gens, Generations(s.live)) {
		return ResultStale, ""
	}
	full, err := s.pipeline.RenderFull(ctx, s.stores)
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case !maps.Equal(s.gens, Generations(s.live)):
		return ResultStale, ""
	case err != nil:
		return ResultMismatch, s.what + ": the full render fails where the incremental one did not"
	case full.Hash() == s.hash:
		return ResultAgreed, ""
	}
	// The incremental bundle is not kept: the object is all it names.
	return ResultMismatch, s.what + ": the full render differs from the incremental one"
}

// mapOnlySample is a bundle accepted through the map-only skip.
type mapOnlySample struct {
	pipeline *dryrun.Pipeline
	bundle   *bundle.Bundle
	what     string // whose check accepted it: "the live state", "admission of Ingress default/web"
}

// AcceptedReusing is called with a verdict of p and its check's trace:
// when it passed the check phases through the map-only skip
// (dryrun.Trace.SemanticReused), its
// bundle is kept (a few at most) for haproxy -c to check again. what says
// whose check it was, for the log.
func (v *Verifier) AcceptedReusing(p *dryrun.Pipeline, verdict *dryrun.Verdict, trace dryrun.Trace, what string) {
	if v == nil || verdict == nil || !trace.SemanticReused || verdict.Bundle == nil || p == nil || v.opts.CheckUnreused == nil ||
		!v.opts.Switches.On(shortcut.MapOnly) || (!verdict.Passed() && verdict.Phase != phase.Tests) {
		return
	}
	b := *verdict.Bundle
	b.SetSources(nil) // the check needs the files only
	offer(v.mapOnly, &mapOnlySample{pipeline: p, bundle: &b, what: what})
}

// checkMapOnly runs haproxy -c, reusing no run, on the sample's bundle.
func (v *Verifier) checkMapOnly(ctx context.Context, s *mapOnlySample) (result, where string) {
	err := v.opts.CheckUnreused(ctx, s.pipeline, s.bundle)
	switch {
	case err == nil:
		return ResultAgreed, ""
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return ResultError, ""
	}
	if _, ok := phase.Of(err); !ok {
		return ResultError, "" // the checker's own failure
	}
	// The reason quotes the configuration: only where it points.
	return ResultMismatch, s.what + ": haproxy -c refuses it: " + position(s.bundle, phase.Reason(err))
}

// readSetSample is a change admitted without rendering: the objects it
// was compared with are olds (by store key).
type readSetSample struct {
	pipeline *dryrun.Pipeline
	changes  map[string]store.Change
	olds     map[string]*unstructured.Unstructured
	what     string
}

// AdmittedAlike is called for a request st's admission allowed because it
// renders alike (admission.Report.RendersAlike). The change is kept (a
// few at most) with the objects it replaces, once RendersAlike holds for
// exactly those.
func (v *Verifier) AdmittedAlike(st *admission.State, req admission.Request) {
	if v == nil || st == nil || st.Pipeline == nil || !v.opts.Switches.On(shortcut.ReadSet) || len(v.readSet) == cap(v.readSet) {
		return
	}
	changes, err := st.Pipeline.Model.StoreChanges(req.Change)
	if err != nil || len(changes) == 0 {
		return
	}
	olds := currentObjects(st.Stores, changes)
	if olds == nil || !st.Pipeline.RendersAlike(st.Stores, changes) || !sameObjects(olds, currentObjects(st.Stores, changes)) {
		return // the store moved on meanwhile
	}
	offer(v.readSet, &readSetSample{pipeline: st.Pipeline, changes: changes, olds: olds, what: RequestObject(req)})
}

// checkReadSet renders the live state in full with the objects the change
// replaced and with the change. What RendersAlike compared (the fields the
// templates can read) does not depend on the rest of the state, so the
// objects need not be in their stores as they were: an admitted change is
// usually stored moments later. A sample of another config is stale.
func (v *Verifier) checkReadSet(ctx context.Context, s *readSetSample) (result, where string) {
	st := v.opts.State()
	if st == nil || st.Pipeline != s.pipeline {
		return ResultStale, ""
	}
	gens := Generations(st.Stores)
	live := store.ReadOnly(st.Stores)
	restored := make(map[string]store.Change, len(s.olds))
	for key, old := range s.olds {
		restored[key] = store.Change{Operation: store.Update, Object: old}
	}
	without, _, err := watched.Apply(live, restored)
	if err != nil {
		return ResultError, ""
	}
	with, _, err := watched.Apply(live, s.changes)
	if err != nil {
		return ResultError, ""
	}
	// Only the first render's hash is kept while the second renders (a
	// full render's bundle is megabytes at scale); it is rendered again
	// to name the difference when the hashes differ.
	before, errBefore := s.pipeline.RenderFull(ctx, without)
	var beforeHash string
	if errBefore == nil {
		beforeHash, before = before.Hash(), nil
	}
	after, errAfter := s.pipeline.RenderFull(ctx, with)
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case !maps.Equal(gens, Generations(st.Stores)):
		return ResultStale, "" // the two renders may have seen two states
	case errBefore != nil || errAfter != nil:
		if errBefore != nil && errAfter != nil && phase.Reason(errBefore) == phase.Reason(errAfter) {
			return ResultAgreed, ""
		}
		return ResultMismatch, s.what + ": the render with the change fails otherwise than without it"
	case beforeHash == after.Hash():
		return ResultAgreed, ""
	}
	before, errBefore = s.pipeline.RenderFull(ctx, without)
	if errBefore != nil || before.Hash() != beforeHash {
		// The render is not what it was (the state moved, the context
		// ended): the mismatch stands, its place unknown.
		return ResultMismatch, s.what + ": the bundles differ"
	}
	return ResultMismatch, s.what + ": " + firstDifference(s.pipeline, before, after)
}

// currentObjects returns the object each change replaces, as its store
// holds it now; nil when one is missing.
func currentObjects(stores map[string]*store.Store, changes map[string]store.Change) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(changes))
	for key, c := range changes {
		s := stores[key]
		if s == nil || c.Object == nil {
			return nil
		}
		old, ok := s.ByName(c.Object.GetNamespace(), c.Object.GetName())
		if !ok {
			return nil
		}
		out[key] = old
	}
	return out
}

// sameObjects reports whether a and b hold the very same objects.
func sameObjects(a, b map[string]*unstructured.Unstructured) bool {
	return a != nil && b != nil && maps.EqualFunc(a, b, func(x, y *unstructured.Unstructured) bool { return x == y })
}

// RequestObject names the object of a request: "Ingress default/web".
func RequestObject(req admission.Request) string {
	obj := req.Object
	if obj == nil {
		obj = req.OldObject
	}
	if obj == nil {
		return "a change of " + req.Resource.Resource
	}
	ref := bundle.ObjectRef{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	return ref.String()
}

// interrupted is the result of a check whose context ended: cancelled
// (work arrived) or an error (it ran out of time).
func interrupted(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ResultCancelled
	}
	return ResultError
}
