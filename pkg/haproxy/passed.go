package haproxy

import (
	"slices"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// DefaultPassedEntries bounds the semantic results the checker keeps (see
// passedRuns): each is a hash and a few warnings. Enough that a config's
// embedded tests, which check a bundle each, do not push out the live
// configuration's.
const DefaultPassedEntries = 64

// passedRuns remembers the bundles `haproxy -c` accepted, keyed by
// semanticKey: everything haproxy -c reads except the content of maps it
// reads as plain strings (see looseMaps). A bundle that differs from an
// accepted one only in such maps is accepted too, with the same warnings,
// without running haproxy again: a new Ingress that adds a route to an
// existing backend changes only a map. A run is also kept under aloneKey,
// which leaves out the maps a stub configuration can check alone
// (Checker.acceptedAlone). Safe for concurrent use: lru.Cache
// is ("Cache is a thread-safe fixed size LRU cache", k8s.io/utils/lru), and
// the warnings are copied in and out, so no caller shares a slice.
type passedRuns struct {
	runs *lru.Cache // key -> []string (warnings)
}

func newPassedRuns(n int) *passedRuns { return &passedRuns{runs: lru.New(n)} }

// get returns the warnings of an accepted run with key.
func (p *passedRuns) get(key string) ([]string, bool) {
	if p == nil || key == "" {
		return nil, false
	}
	v, ok := p.runs.Get(key)
	if !ok {
		return nil, false
	}
	return slices.Clone(v.([]string)), true
}

// add records that haproxy -c accepted the bundle of key with warnings.
func (p *passedRuns) add(key string, warnings []string) {
	if p == nil || key == "" {
		return
	}
	p.runs.Add(key, slices.Clone(warnings))
}

// semanticKey identifies what haproxy -c reads of b, leaving out the
// content of the maps in loose (by name); "" when loose is nil (the
// bundle may run code, which can read any file).
func semanticKey(b *bundle.Bundle, loose map[string]bool) string {
	if loose == nil {
		return ""
	}
	k := contenthash.New()
	field := func(s string) { k.String(s) }
	field(b.BaseDir)
	field(b.Config)
	for _, g := range []struct {
		kind  bundle.Kind
		files map[string]string
	}{{bundle.KindMap, b.Maps}, {bundle.KindFile, b.Files}, {bundle.KindCert, b.Certs}} {
		field(string(g.kind))
		names := make([]string, 0, len(g.files))
		for n := range g.files {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			field(n)
			if g.kind == bundle.KindMap && loose[n] {
				field("") // any content: haproxy -c accepts it
				continue
			}
			field(g.files[n])
		}
	}
	return k.Sum()
}
