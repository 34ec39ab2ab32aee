package shadow

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Reread reads one object whole from the API server (trimmed as every
// store's objects are: watched.Trim).
type Reread func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)

// checkPrune checks the prune shortcut on the published render s: one
// object of each store (another at each check) is read again whole from
// the API server (Options.Reread), and the live state is rendered in
// full with those objects in place of what the stores kept of them. The
// published bundle must come out. When it does not, the pruned state is
// rendered in full too: a difference between the two full renders is
// pruning's (a mismatch); none leaves the difference to the render check.
// An object that changed or went away since it was stored is left out;
// a state that moved on is stale.
func (v *Verifier) checkPrune(ctx context.Context, s *liveSample) (result, where string) {
	if !maps.Equal(s.gens, Generations(s.stores)) {
		return ResultStale, ""
	}
	round := v.pruneRound.Add(1)
	changes := map[string]store.Change{}
	var reread []string
	for _, r := range s.pipeline.Model.All() {
		objs := s.stores[r.Key].List()
		if len(objs) == 0 {
			continue
		}
		kept := objs[round%uint64(len(objs))]
		whole, err := v.opts.Reread(ctx, r.GVR, kept.GetNamespace(), kept.GetName())
		switch {
		case ctx.Err() != nil:
			return interrupted(ctx), ""
		case apierrors.IsNotFound(err):
			continue // deleted since: the store follows
		case err != nil:
			return ResultError, ""
		case whole.GetResourceVersion() != kept.GetResourceVersion():
			continue // changed since: the store follows
		}
		changes[r.Key] = store.Change{Operation: store.Update, Object: whole}
		reread = append(reread, bundle.ObjectRef{Kind: whole.GetKind(), Namespace: whole.GetNamespace(), Name: whole.GetName()}.String())
	}
	if len(changes) == 0 {
		return ResultStale, ""
	}
	wholeStores, _, err := watched.Apply(store.ReadOnly(s.stores), changes)
	if err != nil {
		return ResultError, ""
	}
	full, err := s.pipeline.RenderFull(ctx, wholeStores)
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case !maps.Equal(s.gens, Generations(s.stores)):
		return ResultStale, ""
	case err == nil && sameRender(full, s.bundle):
		return ResultAgreed, ""
	}
	pruned, perr := s.pipeline.RenderFull(ctx, store.ReadOnly(s.stores))
	switch {
	case ctx.Err() != nil:
		return interrupted(ctx), ""
	case !maps.Equal(s.gens, Generations(s.stores)):
		return ResultStale, ""
	case err != nil && perr != nil && err.Error() == perr.Error(), err == nil && perr == nil && sameRender(full, pruned):
		return ResultAgreed, "" // the published render is the render check's to compare
	}
	what := fmt.Sprintf("the whole objects (%s) render otherwise than what the stores keep of them", strings.Join(reread, ", "))
	switch {
	case err != nil || perr != nil:
		// Not the reasons: a template can put any object's data into them.
		return ResultMismatch, what + ": one render fails, the other does not, or they fail otherwise"
	case full.Hash() == pruned.Hash():
		return ResultMismatch, what + ": the status documents (resourceStatus) differ"
	}
	return ResultMismatch, what + ": " + wholeDifference(s, pruned, full)
}

// sameRender reports whether a and b are the same render: the same files
// and the same status documents (which are no file).
func sameRender(a, b *bundle.Bundle) bool {
	return a.Hash() == b.Hash() && reflect.DeepEqual(a.Status, b.Status)
}

// wholeDifference names where the render over whole objects first differs
// from the render over what the stores keep (never the content).
func wholeDifference(s *liveSample, pruned, whole *bundle.Bundle) string {
	prunedFiles, wholeFiles := filesByPath(pruned), filesByPath(whole)
	for _, f := range append(pruned.AllFiles(), whole.AllFiles()...) {
		p, inPruned := prunedFiles[f.RelPath]
		w, inWhole := wholeFiles[f.RelPath]
		switch {
		case !inPruned:
			return f.RelPath + " is rendered over the whole objects only" + objectOf(whole, f.RelPath, 0)
		case !inWhole:
			return f.RelPath + " is rendered over the kept fields only" + objectOf(pruned, f.RelPath, 0)
		case p.Content == w.Content:
			continue
		}
		line := firstDifferentLine(p.Content, w.Content)
		where := fmt.Sprintf("%s line %d%s", f.RelPath, line, templateOf(s.pipeline, f))
		if obj := objectOf(whole, f.RelPath, line); obj != "" {
			return where + obj
		}
		return where + objectOf(pruned, f.RelPath, line)
	}
	return "the bundles differ"
}

// pruneChecked reports whether prune checks can run: a Reread, and the
// prune shortcut on.
func (v *Verifier) pruneChecked() bool {
	return v.opts.Reread != nil && v.opts.Switches.On(shortcut.Prune)
}
