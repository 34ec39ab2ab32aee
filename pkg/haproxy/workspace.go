package haproxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Workspace is a fresh private directory a bundle is rendered for and
// checked in. Render with BaseDir = ws.Dir(), check, then Remove.
type Workspace struct {
	dir string
}

// NewWorkspace creates a new directory with mode 0700 under parent ("" means
// os.TempDir()).
func NewWorkspace(parent string) (*Workspace, error) {
	dir, err := os.MkdirTemp(parent, "htc-check-")
	if err != nil {
		return nil, fmt.Errorf("create check workspace: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create check workspace: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create check workspace: %w", err)
	}
	return &Workspace{dir: abs}, nil
}

// Dir is the workspace's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// Remove deletes the workspace and everything in it.
func (w *Workspace) Remove() error { return os.RemoveAll(w.dir) }

// NameableDir reports whether a configuration can name files under dir:
// the templates write absolute paths under the bundle's base directory
// (map(/dir/maps/host.map)), unquoted, so a byte HAProxy's configuration
// parser reads specially — whitespace, '#' (a comment), a quote, '\',
// '$' — or a control byte would cut or change every such path, and every
// check would fail with a misleading reason. The error names the byte.
func NameableDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("directory %q: %w", dir, err)
	}
	for _, r := range abs {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("#\"'\\$", r) {
			return fmt.Errorf("directory %q: %q in its path: HAProxy's configuration cannot name files under it unquoted; use a path without whitespace, '#', quotes, '\\' or '$'", abs, r)
		}
	}
	return nil
}
