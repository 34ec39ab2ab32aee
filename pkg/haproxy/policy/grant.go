package policy

import (
	"path/filepath"
	"strings"
)

// Grants reports whether an operator's grant (the controller's
// --allowed-directives) permits entry, one spec.allowedDirectives entry of a
// config. A config can only narrow what the operator allows: a directive or
// EnvExpansionKey must be granted itself (names compare case-insensitively),
// and a "path:<dir>" entry must lie at or under a granted "path:<dir>". An
// entry that is neither is never granted.
func Grants(grant []string, entry string) bool {
	entry = strings.TrimSpace(entry)
	if dir, ok := strings.CutPrefix(entry, AllowPathPrefix); ok {
		return pathGranted(grant, strings.TrimSpace(dir))
	}
	for _, g := range grant {
		g = strings.TrimSpace(g)
		if !strings.HasPrefix(g, AllowPathPrefix) && strings.EqualFold(g, entry) {
			return true
		}
	}
	return false
}

// pathGranted reports whether dir, an absolute directory, lies at or under
// a granted path entry.
func pathGranted(grant []string, dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	for _, g := range grant {
		gd, ok := strings.CutPrefix(strings.TrimSpace(g), AllowPathPrefix)
		if !ok || !filepath.IsAbs(strings.TrimSpace(gd)) {
			continue
		}
		gd = filepath.Clean(strings.TrimSpace(gd))
		if dir == gd || gd == "/" || strings.HasPrefix(dir, gd+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
