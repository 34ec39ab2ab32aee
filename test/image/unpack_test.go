package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// unpack reads the OCI layout in the archive and extracts its layers in
// order into img.root.
func (img *image) unpack() error {
	blobs := map[string][]byte{}
	var index []byte
	f, err := os.Open(img.archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name := path.Clean(hdr.Name)
		switch {
		case name == "index.json":
			index, err = io.ReadAll(tr)
		case strings.HasPrefix(name, "blobs/sha256/") && hdr.Typeflag == tar.TypeReg:
			blobs["sha256:"+path.Base(name)], err = io.ReadAll(tr)
		}
		if err != nil {
			return err
		}
	}
	if err := json.Unmarshal(index, &img.index); err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	if len(img.index.Manifests) != 1 {
		return fmt.Errorf("index.json lists %d manifests, want 1", len(img.index.Manifests))
	}
	blob := func(d descriptor) ([]byte, error) {
		b, ok := blobs[d.Digest]
		if !ok {
			return nil, fmt.Errorf("blob %s is not in the archive", d.Digest)
		}
		if int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s has %d bytes, its descriptor says %d", d.Digest, len(b), d.Size)
		}
		return b, nil
	}
	m, err := blob(img.index.Manifests[0])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(m, &img.manifest); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	c, err := blob(img.manifest.Config)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(c, &img.config); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := os.MkdirAll(img.root, 0o755); err != nil {
		return err
	}
	for _, l := range img.manifest.Layers {
		b, err := blob(l)
		if err != nil {
			return err
		}
		if err := extractLayer(img.root, bytes.NewReader(b)); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return nil
}

// extractLayer extracts a gzip-compressed layer into root, as a container
// runtime would: paths resolve inside root (symlinks included), whiteouts
// remove what earlier layers put there, device nodes are left to the
// runtime.
func extractLayer(root string, r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		target, err := inRoot(root, hdr.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		if base := path.Base(hdr.Name); strings.HasPrefix(base, ".wh.") {
			if base == ".wh..wh..opq" {
				entries, _ := os.ReadDir(filepath.Dir(target))
				for _, e := range entries {
					_ = os.RemoveAll(filepath.Join(filepath.Dir(target), e.Name()))
				}
			} else {
				_ = os.RemoveAll(filepath.Join(filepath.Dir(target), strings.TrimPrefix(base, ".wh.")))
			}
			continue
		}
		mode := hdr.FileInfo().Mode()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
				_ = os.RemoveAll(target)
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, mode})
		case tar.TypeReg:
			_ = os.RemoveAll(target)
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.RemoveAll(target)
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			src, err := inRoot(root, hdr.Linkname)
			if err != nil {
				return err
			}
			_ = os.RemoveAll(target)
			if err := os.Link(src, target); err != nil {
				return err
			}
			continue // shares the source's owner and mode
		default: // devices and fifos: the runtime provides /dev
			continue
		}
		if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		}
	}
	// Directory modes last: a read-only directory must still be filled.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

// inRoot returns where name (a path in the image) lives under root: its
// parent directories are resolved inside root, following symlinks the way
// the image would see them (an absolute link is relative to root), so that
// nothing is written outside root. The last element is not followed.
func inRoot(root, name string) (string, error) {
	dir, base := path.Split(path.Clean("/" + name))
	d, err := resolveDir(root, dir, 0)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, d, base), nil
}

// resolveDir resolves every element of p (an image path) inside root and
// returns an image path without symlinks.
func resolveDir(root, p string, hops int) (string, error) {
	cur := "/"
	for _, c := range strings.Split(path.Clean("/"+p), "/") {
		if c == "" {
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return "", errors.New("too many levels of symbolic links")
			}
			link, err := os.Readlink(filepath.Join(root, next))
			if err != nil {
				return "", err
			}
			if !path.IsAbs(link) {
				link = path.Join(cur, link)
			}
			if next, err = resolveDir(root, link, hops); err != nil {
				return "", err
			}
		}
		cur = next
	}
	return cur, nil
}

// run runs argv inside the image's root filesystem (chroot) as the image's
