package haproxy

import (
	"fmt"
	"os"
	"path/filepath"
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
