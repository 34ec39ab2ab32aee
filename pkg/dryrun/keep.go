package dryrun

import (
	"slices"

	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Keep is what a store of watch key k keeps of each object under this
// pipeline's config: what its templates can read of it (reads.Set)
// through every store key k fills, with what the store and the controller
// need themselves (watched.Resource.Keep); with spec.resourceStatus also
// the whole status, which the status writer compares its documents with.
// Nil (whole objects) with the prune shortcut off, or when no resource of
// the config has watch key k.
//
// The controller's informers prune to it; a proposed config is judged
// over stores that keep at least it (package admission).
func (p *Pipeline) Keep(k watched.WatchKey) *watched.Keep {
	if !p.env.Shortcuts.On(shortcut.Prune) {
		return nil
	}
	var keep *watched.Keep
	first := true
	for _, r := range p.Model.All() {
		if r.WatchKey() != k {
			continue
		}
		whole, shape := p.Reads().Paths(r.Key)
		if p.Config.Spec.ResourceStatus != nil {
			whole = append(slices.Clone(whole), []string{"status"})
		}
		rk := r.Keep(whole, shape)
		if first {
			keep, first = rk, false
		} else {
			keep = watched.Union(keep, rk)
		}
	}
	return keep
}
