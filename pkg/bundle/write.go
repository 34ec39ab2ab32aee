package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes b into dir: haproxy.cfg, then maps/, files/ and certs/ with
// their names as relative paths. Directories are created 0700, files 0600.
// Names CheckName refuses are refused before anything is written. dir must
// exist. Every access goes through an os.Root, so no name or symbolic link
// can make Write leave dir.
func Write(dir string, b *Bundle) error {
	if b == nil {
		return errors.New("write bundle: nil bundle")
	}
	files := b.AllFiles()
	for _, f := range files[1:] {
		if err := CheckName(f.Name); err != nil {
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
