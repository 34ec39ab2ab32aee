package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
)

const (
	// fileMode is the mode of every published file: the HAProxy container
	// reads through a shared group, certificates hold private keys.
	fileMode fs.FileMode = 0o640
	// dirMode is the mode of every directory Publish creates.
	dirMode fs.FileMode = 0o750
	// tmpPrefix starts the name of every temporary file.
	tmpPrefix = ".htc-tmp-"
)

// managedDirs are the sub-directories that belong to htc.
func managedDirs() [3]string {
	return [...]string{
		bundle.Dir(bundle.KindMap),
		bundle.Dir(bundle.KindFile),
		bundle.Dir(bundle.KindCert),
	}
}

// Dir is an output directory HAProxy reads: haproxy.cfg at its root, maps/,
// files/ and certs/ beside it. It is not safe for concurrent Publish calls.
type Dir struct {
	path string
	// afterWrite, when set, is called after each file is in place (tests).
	afterWrite func(rel string)
}

// Open makes dir (MkdirAll 0750) if missing and returns it; path is made
// absolute.
func Open(dir string) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("publish: empty output directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("publish: %s is not a directory", abs)
	}
	return &Dir{path: abs}, nil
}

// Path is the absolute directory; bundles must be rendered (or Relocated)
// for it.
func (d *Dir) Path() string { return d.path }

// Result is what one Publish changed.
type Result struct {
	// Changed is true when something was written or removed.
	Changed bool
	// Written are the relative paths written (content differed or the file
	// was missing), sorted.
	Written []string
	// Removed are the stale managed files removed, sorted.
	Removed []string

	dir *Dir
	// writes is the previous state of every written path, in write order.
	writes []entry
	// removed are the files removed, in removal order.
	removed []entry
	// removedDirs are the directories removed, deepest first.
	removedDirs []string
	// createdDirs are the directories created, parents first.
	createdDirs []string
}

// entry is what a path held before Publish changed it.
type entry struct {
	rel     string // slash-separated, relative to the directory
	existed bool
	isLink  bool
	link    string // symlink target when isLink
	data    []byte
	perm    fs.FileMode
}

// Publish writes b into the directory: maps, files and certificates first,
// haproxy.cfg last, then it removes stale files under maps/, files/ and
// certs/ (see the package documentation). b.BaseDir must equal d.Path(): the
// files would reference another directory otherwise. Names refused by
// bundle.CheckName, and any other problem found while looking at the
// directory, fail before anything is written. When a write or removal fails
// midway, Publish rolls back what it had done and returns a nil Result.
func (d *Dir) Publish(b *bundle.Bundle) (*Result, error) {
	files, want, err := d.check(b)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	defer func() { _ = root.Close() }()
	p, err := makePlan(root, files)
	if err != nil {
		return nil, err
	}
	res := &Result{dir: d}
	if err := res.apply(root, p, want); err != nil {
		if rbErr := res.rollback(root); rbErr != nil {
			return nil, errors.Join(err, rbErr)
		}
		return nil, err
	}
	for _, w := range res.writes {
		res.Written = append(res.Written, w.rel)
	}
	for _, e := range res.removed {
		res.Removed = append(res.Removed, e.rel)
	}
	sort.Strings(res.Written)
	sort.Strings(res.Removed)
	res.Changed = len(res.Written) > 0 || len(res.Removed) > 0
	return res, nil
}

// Rollback restores the directory to its state before Publish: previous
// contents of changed files are written back, files that did not exist are
// removed, removed files are restored, each again atomically. The previous
// files (and haproxy.cfg last among them) are put back before the files
// Publish added are removed, except where one path blocks another. Rollback
// is a no-op on a Result with Changed == false and after a successful
// Rollback; on failure it goes on with the other paths and returns all
// errors.
func (r *Result) Rollback() error {
	if r == nil || r.dir == nil || r.empty() {
		return nil
	}
	root, err := os.OpenRoot(r.dir.path)
	if err != nil {
		return fmt.Errorf("publish: rollback: %w", err)
	}
	defer func() { _ = root.Close() }()
	return r.rollback(root)
}

func (r *Result) empty() bool {
	return len(r.writes) == 0 && len(r.removed) == 0 && len(r.removedDirs) == 0 && len(r.createdDirs) == 0
}

// check validates b for d and returns its files in write order (haproxy.cfg
// last) and the set of their relative paths.
func (d *Dir) check(b *bundle.Bundle) ([]bundle.File, map[string]bool, error) {
	if b == nil {
		return nil, nil, errors.New("publish: nil bundle")
	}
	if b.BaseDir == "" || filepath.Clean(b.BaseDir) != d.path {
		return nil, nil, fmt.Errorf("publish: bundle rendered for %q, not for %q: its files would reference another directory (render or Relocate it for this one)", b.BaseDir, d.path)
	}
	all := b.AllFiles()
	files := append(all[1:len(all):len(all)], all[0])
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.RelPath] = true
	}
	for _, f := range files[:len(files)-1] {
		if err := bundle.CheckName(f.Name); err != nil {
			return nil, nil, fmt.Errorf("publish: %s %q: %w", f.Kind, f.Name, err)
		}
		parts := strings.Split(f.RelPath, "/")
		for i, seg := range parts {
			if strings.HasPrefix(seg, tmpPrefix) {
				return nil, nil, fmt.Errorf("publish: %s %q: a path segment starts with %q, which is reserved for temporary files", f.Kind, f.Name, tmpPrefix)
			}
			if anc := strings.Join(parts[:i], "/"); i > 1 && want[anc] {
				return nil, nil, fmt.Errorf("publish: %s: %s is also a file of the bundle", f.RelPath, anc)
			}
		}
	}
	return files, want, nil
}
