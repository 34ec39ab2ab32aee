package haproxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/haproxy-template/htc/pkg/render"
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

// WriteBundle writes b into dir: haproxy.cfg, then maps/, files/ and certs/
// with their names as relative paths. Directories are created 0700, files
// 0600. Names that are not clean relative paths inside their directory
// (ValidateName) are refused before anything is written. dir must exist.
func WriteBundle(dir string, b *render.Bundle) error {
	if b == nil {
		return errors.New("write bundle: nil bundle")
	}
	files := b.AllFiles()
	for _, f := range files[1:] {
		if err := ValidateName(f.Name); err != nil {
			return fmt.Errorf("write bundle: %s %q: %w", f.Kind, f.Name, err)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("write bundle: %s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	defer func() { _ = root.Close() }()
	for _, f := range files {
		if err := writeInRoot(root, f.RelPath, f.Content); err != nil {
			return fmt.Errorf("write bundle: %s: %w", f.RelPath, err)
		}
	}
	return nil
}

// writeInRoot writes one file below root, creating its parent directories.
// os.Root refuses any path that would leave the directory, symlinks included.
func writeInRoot(root *os.Root, rel, content string) error {
	rel = filepath.FromSlash(rel)
	if d := filepath.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Chmod(rel, 0o600)
}
