package dryrun

import "github.com/haproxy-template/htc/pkg/bundle"

// retainer is a Checker whose caches can forget what they keep of bundles
// other than the live one (a *haproxy.Checker: haproxy.Checker.Retain).
type retainer interface {
	Retain(live *bundle.Bundle)
}

// Retain forgets what the pipeline's caches keep alive of bundles other
// than live, the live configuration's: the file digests (bundle.Hasher),
// each output's last text (render.Engine.Retain) and, through its
// checker, the parse phase outcomes, policy scans and clean map contents
// (haproxy.Checker.Retain). After admissions those are proposals' texts,
// which nothing else keeps at rest: the controller calls it at its idle
// memory return. Every one of these caches is a pure function of what it
// is keyed on, so the next admission is answered as before, a little
// slower once (it hashes, parses and scans its changed files again). A nil
// live forgets everything. Safe for concurrent use with checks.
func (p *Pipeline) Retain(live *bundle.Bundle) {
	p.hasher.Retain(live)
	p.engine.Retain(live)
	if r, ok := p.checker.(retainer); ok {
		r.Retain(live)
	}
}
