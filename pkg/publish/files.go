package publish

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

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
