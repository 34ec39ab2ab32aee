package publish

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/render"
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
var managedDirs = [...]string{
	render.Dir(render.KindMap),
	render.Dir(render.KindFile),
	render.Dir(render.KindCert),
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
// haproxy.ValidateName, and any other problem found while looking at the
// directory, fail before anything is written. When a write or removal fails
// midway, Publish rolls back what it had done and returns a nil Result.
func (d *Dir) Publish(b *render.Bundle) (*Result, error) {
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

// Current reports whether the directory already holds exactly b: every file
// with the same content, and no stale regular file or symbolic link under
// maps/, files/ or certs/. Modes and leftover temporary files are not
// compared. b.BaseDir must equal d.Path().
func (d *Dir) Current(b *render.Bundle) (bool, error) {
	files, want, err := d.check(b)
	if err != nil {
		return false, err
	}
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return false, fmt.Errorf("publish: %w", err)
	}
	defer func() { _ = root.Close() }()
	for _, top := range managedDirs {
		st, err := root.Lstat(top)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return false, fmt.Errorf("publish: %s: %w", top, err)
		case !st.IsDir():
			return false, nil
		}
		t, err := walk(root, top)
		if err != nil {
			return false, err
		}
		for _, rel := range t.files {
			if !want[rel] && !isTemp(rel) {
				return false, nil
			}
		}
	}
	for _, f := range files {
		st, err := root.Lstat(filepath.FromSlash(f.RelPath))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("publish: %s: %w", f.RelPath, err)
		case !st.Mode().IsRegular():
			return false, nil
		}
		data, err := root.ReadFile(filepath.FromSlash(f.RelPath))
		if err != nil {
			return false, fmt.Errorf("publish: %s: %w", f.RelPath, err)
		}
		if string(data) != f.Content {
			return false, nil
		}
	}
	return true, nil
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
func (d *Dir) check(b *render.Bundle) ([]render.File, map[string]bool, error) {
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
		if err := haproxy.ValidateName(f.Name); err != nil {
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
	file  render.File
	prior entry
}

// makePlan looks at the directory and decides, for every bundle file,
// whether it must be written and what stands in its way.
func makePlan(root *os.Root, files []render.File) (*plan, error) {
	for _, top := range managedDirs {
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
		case st.IsDir() && rel != render.ConfigFileName:
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
		if rel == render.ConfigFileName && !synced {
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
	for _, top := range managedDirs {
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

// rollback undoes what r records; see Rollback.
func (r *Result) rollback(root *os.Root) error {
	var errs []error
	fail := func(rel string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("publish: rollback: %s: %w", rel, err))
		}
	}
	// A previous file blocks, or is blocked by, a file Publish added when one
	// is a directory of the other: it can only come back after that is gone.
	var added []string
	for _, w := range r.writes {
		if !w.existed {
			added = append(added, w.rel)
		}
	}
	blocked := func(rel string) bool {
		for _, a := range added {
			if a == rel || strings.HasPrefix(rel, a+"/") || strings.HasPrefix(a, rel+"/") {
				return true
			}
		}
		return false
	}
	var cfg *entry
	for i, w := range r.writes {
		if w.rel == render.ConfigFileName {
			cfg = &r.writes[i]
		} else if w.existed {
			fail(w.rel, restore(root, w))
		}
	}
	var later []entry
	for _, e := range r.removed {
		if blocked(e.rel) {
			later = append(later, e)
			continue
		}
		fail(e.rel, restore(root, e))
	}
	if cfg != nil {
		if cfg.existed {
			fail(cfg.rel, restore(root, *cfg))
		} else {
			fail(cfg.rel, removeIfExists(root, cfg.rel))
		}
	}
	for i := len(r.writes) - 1; i >= 0; i-- {
		if w := r.writes[i]; !w.existed && w.rel != render.ConfigFileName {
			fail(w.rel, removeIfExists(root, w.rel))
		}
	}
	for i := len(r.createdDirs) - 1; i >= 0; i-- {
		rel := r.createdDirs[i]
		entries, err := readDir(root, rel)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) > 0) {
			continue // something else put files there: keep it
		}
		if err == nil {
			err = root.Remove(filepath.FromSlash(rel))
		}
		fail(rel, err)
	}
	for i := len(r.removedDirs) - 1; i >= 0; i-- {
		fail(r.removedDirs[i], mkdirs(root, r.removedDirs[i], nil))
	}
	for _, e := range later {
		fail(e.rel, restore(root, e))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.writes, r.removed, r.removedDirs, r.createdDirs = nil, nil, nil, nil
	return nil
}

// restore puts e back at its path, atomically.
func restore(root *os.Root, e entry) error {
	if dir := path.Dir(e.rel); dir != "." {
		if err := mkdirs(root, dir, nil); err != nil {
			return err
		}
	}
	if !e.isLink {
		return writeAtomic(root, e.rel, e.data, e.perm)
	}
	tmp := tempName(path.Dir(e.rel))
	if err := root.Symlink(e.link, filepath.FromSlash(tmp)); err != nil {
		return err
	}
	if err := root.Rename(filepath.FromSlash(tmp), filepath.FromSlash(e.rel)); err != nil {
		_ = root.Remove(filepath.FromSlash(tmp))
		return err
	}
	return nil
}

func removeIfExists(root *os.Root, rel string) error {
	if err := root.Remove(filepath.FromSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeAtomic replaces rel with data: a temporary file in the same directory
// is written, synced, given perm and renamed over rel.
func writeAtomic(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	dir := path.Dir(rel)
	var f *os.File
	var tmp string
	for range 10 {
		var err error
		tmp = tempName(dir)
		f, err = root.OpenFile(filepath.FromSlash(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if f == nil {
		return fmt.Errorf("no free temporary file name in %s", dir)
	}
	err := writeSyncClose(f, data, perm)
	if err == nil {
		err = root.Rename(filepath.FromSlash(tmp), filepath.FromSlash(rel))
	}
	if err != nil {
		_ = root.Remove(filepath.FromSlash(tmp))
		return err
	}
	return nil
}

func writeSyncClose(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // on the open file: no umask, no path race
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tempName is a fresh temporary file name in dir (slash-separated).
func tempName(dir string) string {
	return path.Join(dir, tmpPrefix+rand.Text())
}

func isTemp(rel string) bool { return strings.HasPrefix(path.Base(rel), tmpPrefix) }

// mkdirs creates the slash-separated directory rel and its missing parents
// with dirMode, appending each one created to created (when not nil), and
// sets dirMode on the existing ones.
func mkdirs(root *os.Root, rel string, created *[]string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		name := filepath.FromSlash(p)
		st, err := root.Lstat(name)
		switch {
		case err == nil && st.IsDir():
			if st.Mode().Perm() != dirMode {
				if err := root.Chmod(name, dirMode); err != nil {
					return err
				}
			}
			continue
		case err == nil:
			return fmt.Errorf("%s is a %s, not a directory", p, typeName(st.Mode()))
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := root.Mkdir(name, dirMode); err != nil {
			return err
		}
		if created != nil {
			*created = append(*created, p)
		}
		if err := root.Chmod(name, dirMode); err != nil {
			return err
		}
	}
	return nil
}

// syncDirs makes the renames in dirs durable, best effort: the content can be
// published again from the cluster, and some file systems refuse to sync a
// directory.
func syncDirs(root *os.Root, dirs map[string]bool) {
	for dir := range dirs {
		if f, err := root.Open(filepath.FromSlash(dir)); err == nil {
			_ = f.Sync()
			_ = f.Close()
		}
	}
}

// tree is what walk found below a directory (slash-separated paths).
type tree struct {
	files  []string // regular files and symbolic links
	dirs   []string // sub-directories, deepest first
	others []string // sockets, pipes, devices
}

// walk lists everything below the real directory rel without following
// symbolic links.
func walk(root *os.Root, rel string) (*tree, error) {
	t := &tree{}
	var visit func(dir string) error
	visit = func(dir string) error {
		entries, err := readDir(root, dir)
		if err != nil {
			return fmt.Errorf("publish: %s: %w", dir, err)
		}
		for _, e := range entries {
			p := dir + "/" + e.Name()
			switch {
			case e.IsDir():
				if err := visit(p); err != nil {
					return err
				}
				t.dirs = append(t.dirs, p)
			case e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0:
				t.files = append(t.files, p)
			default:
				t.others = append(t.others, p)
			}
		}
		return nil
	}
	return t, visit(rel)
}

func readDir(root *os.Root, rel string) ([]fs.DirEntry, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.ReadDir(-1)
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	default:
		return "special file"
	}
}
