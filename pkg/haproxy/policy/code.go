package policy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// isCodeKey reports whether an AllowedDirectives key permits loading or
// running code (lua-load, ssl-provider, external-check, program, a filter
// that dlopen()s a plugin, ...): the inventory's ClassCode entries.
func isCodeKey(key string) bool {
	return key != "" && slices.ContainsFunc(inventory.Table, func(e inventory.Entry) bool { return e.Class == inventory.ClassCode && e.Key == key })
}

// GrantsCode reports whether allowed permits any directive that loads or
// runs code.
func GrantsCode(allowed []string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool { return isCodeKey(strings.ToLower(a)) })
}

// CodeFingerprint identifies the code a bundle makes HAProxy load or run:
// the lines that use a code directive allowed grants (each with its file)
// and the bundle's general files (which those can load: Lua modules, a
// tracer's configuration). It is "" when the bundle uses no code
// directive. Two bundles with equal fingerprints run the same code; maps,
// certificates and the rest of haproxy.cfg do not enter it.
func CodeFingerprint(b *bundle.Bundle, allowed []string) string {
	if b == nil || !GrantsCode(allowed) {
		return ""
	}
	s := newPolicyScan(b, allowed)
	s.checkNames(b)
	s.scanConfig(b.Config)
	s.scanPending()
	if len(s.codeAt) == 0 {
		return ""
	}
	contents := map[string]string{}
	for _, f := range b.AllFiles() {
		contents[f.RelPath] = f.Content
	}
	k := contenthash.New().String(strconv.Itoa(len(s.codeAt)))
	for _, at := range s.codeAt {
		k.String(at.file).String(lineOf(contents[at.file], at.line))
	}
	for _, f := range b.AllFiles() {
		if f.Kind == bundle.KindFile {
			k.String(f.RelPath).String(f.Content)
		}
	}
	return k.Sum()
}

// lineOf returns line n (1-based) of text, "" when there is none.
func lineOf(text string, n int) string {
	for i, line := range Lines(text) {
		if i == n {
			return line
		}
	}
	return ""
}
