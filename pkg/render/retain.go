package render

import "github.com/haproxy-template/htc/pkg/bundle"

// Retain makes each output's last text (keptOutput) live's file of that
// output, or none when live has no such file: after admissions the last
// text of an output is a proposal's, kept alive at rest by nothing else.
// The last text only spares an allocation when an output is written equal
// to it (keptOutput compares every byte), so Retain changes what a render
// allocates, never what it returns. A nil live forgets every last text.
// Safe for concurrent use with renders.
func (e *Engine) Retain(live *bundle.Bundle) {
	for _, o := range e.outputs {
		var text *string
		if live != nil {
			if s, ok := live.Target(target(o)); ok {
				text = &s
			}
		}
		o.last.Store(text)
	}
}

// target is the bundle.Bundle.Target of output o.
func target(o output) string {
	if o.kind == "" {
		return bundle.ConfigFileName
	}
	return string(o.kind) + ":" + o.name
}
