package haproxy

import "github.com/haproxy-template/htc/pkg/bundle"

// Retain forgets what the checker's caches keep alive of bundles other
// than live (the live configuration's): the parse phase outcomes and
// policy scans of another haproxy.cfg (each holds its text) and the clean
// map contents that are not live's files. Those are proposals'; at rest
// they would stay in the heap until newer proposals pushed them out. The
// caches are pure functions of what they are keyed on, so what is
// forgotten is computed again when asked for: Retain changes how fast the
// next check is, never its answer. The runs kept for the map-only
// shortcut hold hashes only, and are left as they are. A nil live forgets
// everything. Safe for concurrent use with checks.
func (c *Checker) Retain(live *bundle.Bundle) {
	if c.parsed != nil {
		var key parsedKey
		if live != nil {
			key = parsedKey{config: live.Config, syntax: !c.skipSyntax, schema: !c.skipSchema, chunkBytes: c.chunkBytes}
		}
		c.parsed.retain(key, live != nil)
	}
	if c.scans != nil {
		c.scans.Retain(live, c.allowed, c.version.get())
	}
}
