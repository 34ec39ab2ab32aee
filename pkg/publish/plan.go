package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// plan is what Publish will do, decided before anything is changed.
type plan struct {
	// preFiles are stale files in the way of a bundle file, removed first.
	preFiles []string
	// preDirs are stale directories in the way of a bundle file, removed
	// after preFiles, deepest first.
	preDirs []string
	// writes are the files to write, in order, with what their path holds.
	writes []planned
	// fixMode are files with the right content but the wrong mode.
	fixMode []string
	// dirs are the directories of all bundle files, whose mode is set.
	dirs []string
}

type planned struct {
	file  bundle.File
	prior entry
}

// makePlan looks at the directory and decides, for every bundle file,
// whether it must be written and what stands in its way.
func makePlan(root *os.Root, files []bundle.File) (*plan, error) {
	for _, top := range managedDirs() {
		st, err := root.Lstat(top)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("publish: %s: %w", top, err)
		case !st.IsDir():
			return nil, fmt.Errorf("publish: %s: is a %s, not a directory; htc manages this directory", top, typeName(st.Mode()))
		}
	}
	p := &plan{}
	seen, seenDir := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		rel := f.RelPath
		if dir := path.Dir(rel); dir != "." && !seenDir[dir] {
			seenDir[dir] = true
			p.dirs = append(p.dirs, dir)
		}
		parts := strings.Split(rel, "/")
		blocked := false // an ancestor is a stale file: rel does not exist
		for i := 2; i < len(parts) && !blocked; i++ {
			anc := strings.Join(parts[:i], "/")
			st, err := root.Lstat(filepath.FromSlash(anc))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				blocked = true // nothing deeper exists either
				continue
			case err != nil:
				return nil, fmt.Errorf("publish: %s: %w", rel, err)
			case st.IsDir():
				continue
			case st.Mode().IsRegular():
				if !seen[anc] {
					seen[anc] = true
					p.preFiles = append(p.preFiles, anc)
				}
				blocked = true
			default:
				return nil, fmt.Errorf("publish: %s: %s is a %s where a directory is needed", rel, anc, typeName(st.Mode()))
			}
		}
		prior := entry{rel: rel}
		if blocked {
			p.writes = append(p.writes, planned{f, prior})
			continue
		}
		st, err := root.Lstat(filepath.FromSlash(rel))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("publish: %s: %w", rel, err)
		case st.Mode().IsRegular():
			data, err := root.ReadFile(filepath.FromSlash(rel))
			if err != nil {
				return nil, fmt.Errorf("publish: %s: %w", rel, err)
			}
			if string(data) == f.Content {
				if st.Mode().Perm() != fileMode {
					p.fixMode = append(p.fixMode, rel)
				}
				continue
			}
			prior = entry{rel: rel, existed: true, data: data, perm: st.Mode().Perm()}
		case st.Mode()&fs.ModeSymlink != 0:
			// The rename replaces the link itself; it is never written through.
			link, err := root.Readlink(filepath.FromSlash(rel))
			if err != nil {
				return nil, fmt.Errorf("publish: %s: %w", rel, err)
			}
			prior = entry{rel: rel, existed: true, isLink: true, link: link}
		case st.IsDir() && rel != bundle.ConfigFileName:
			// A stale directory where the bundle now has a file.
			t, err := walk(root, rel)
			if err != nil {
				return nil, err
			}
			if len(t.others) > 0 {
				return nil, fmt.Errorf("publish: %s: stale directory holds %s, which htc does not remove", rel, t.others[0])
			}
			p.preFiles = append(p.preFiles, t.files...)
			p.preDirs = append(p.preDirs, t.dirs...)
			p.preDirs = append(p.preDirs, rel)
		default:
			return nil, fmt.Errorf("publish: %s: is a %s, not a regular file", rel, typeName(st.Mode()))
		}
		p.writes = append(p.writes, planned{f, prior})
	}
	return p, nil
}

// apply carries out p, recording every change in r as it is made.
func (r *Result) apply(root *os.Root, p *plan, want map[string]bool) error {
	for _, rel := range p.preFiles {
		if err := r.removeFile(root, rel); err != nil {
			return err
		}
	}
	for _, rel := range p.preDirs {
		if err := root.Remove(filepath.FromSlash(rel)); err != nil {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
		r.removedDirs = append(r.removedDirs, rel)
	}
	synced := false
	touched := map[string]bool{}
	for _, w := range p.writes {
		rel := w.file.RelPath
		if rel == bundle.ConfigFileName && !synced {
			// Everything haproxy.cfg references is durable before it is.
			syncDirs(root, touched)
			synced = true
		}
		dir := path.Dir(rel)
		if dir != "." {
			if err := mkdirs(root, dir, &r.createdDirs); err != nil {
				return fmt.Errorf("publish: %s: %w", rel, err)
			}
		}
		if err := writeAtomic(root, rel, []byte(w.file.Content), fileMode); err != nil {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
		r.writes = append(r.writes, w.prior)
		touched[dir] = true
		if r.dir.afterWrite != nil {
			r.dir.afterWrite(rel)
		}
	}
	syncDirs(root, touched)
	for _, dir := range p.dirs {
		if err := mkdirs(root, dir, &r.createdDirs); err != nil {
			return fmt.Errorf("publish: %s: %w", dir, err)
		}
	}
	for _, rel := range p.fixMode {
		if err := root.Chmod(filepath.FromSlash(rel), fileMode); err != nil {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
	}
	return r.removeStale(root, want)
}

// removeStale removes regular files and symbolic links under the managed
// directories that want does not have, then the directories left empty
// under them, then leftover temporary files at the root.
func (r *Result) removeStale(root *os.Root, want map[string]bool) error {
	for _, top := range managedDirs() {
		if _, err := root.Lstat(top); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		t, err := walk(root, top)
		if err != nil {
			return err
		}
		for _, rel := range t.files {
			if !want[rel] {
				if err := r.removeFile(root, rel); err != nil {
					return err
				}
			}
		}
		for _, rel := range t.dirs {
			entries, err := readDir(root, rel)
			if err != nil {
				return fmt.Errorf("publish: %s: %w", rel, err)
			}
			if len(entries) > 0 {
				continue
			}
			if err := root.Remove(filepath.FromSlash(rel)); err != nil {
				return fmt.Errorf("publish: %s: %w", rel, err)
			}
			r.removedDirs = append(r.removedDirs, rel)
		}
	}
	entries, err := readDir(root, ".")
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && isTemp(e.Name()) {
			if err := root.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("publish: %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// removeFile removes the regular file or symbolic link rel and records what
// it held, unless it is a leftover temporary file.
func (r *Result) removeFile(root *os.Root, rel string) error {
	name := filepath.FromSlash(rel)
	if isTemp(rel) {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
		return nil
	}
	st, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("publish: %s: %w", rel, err)
	}
	e := entry{rel: rel, existed: true}
	if st.Mode()&fs.ModeSymlink != 0 {
		e.isLink = true
		if e.link, err = root.Readlink(name); err != nil {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
	} else {
		e.perm = st.Mode().Perm()
		if e.data, err = root.ReadFile(name); err != nil {
			return fmt.Errorf("publish: %s: %w", rel, err)
		}
	}
	if err := root.Remove(name); err != nil {
		return fmt.Errorf("publish: %s: %w", rel, err)
	}
	r.removed = append(r.removed, e)
	return nil
}
