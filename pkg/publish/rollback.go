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
		if w.rel == bundle.ConfigFileName {
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
		if w := r.writes[i]; !w.existed && w.rel != bundle.ConfigFileName {
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
