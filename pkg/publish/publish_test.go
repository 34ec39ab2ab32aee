package publish

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// openDir opens a fresh output directory.
func openDir(t *testing.T) *Dir {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	return d
}

// bundleFor is a bundle for d whose haproxy.cfg references its maps.
func bundleFor(d *Dir, cfg string, maps, files, certs map[string]string) *bundle.Bundle {
	return &bundle.Bundle{BaseDir: d.Path(), Config: cfg, Maps: maps, Files: files, Certs: certs}
}

// node is one entry of a directory snapshot.
type node struct {
	kind    string // "dir", "file", "link", "other"
	perm    fs.FileMode
	content string // file content or link target
}

// snapshot lists everything below dir (not dir itself) without following
// symbolic links.
func snapshot(t *testing.T, dir string) map[string]node {
	t.Helper()
	out := map[string]node{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		st, err := os.Lstat(p)
		require.NoError(t, err)
		switch {
		case st.IsDir():
			out[rel] = node{kind: "dir", perm: st.Mode().Perm()}
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = node{kind: "link", content: target}
		case st.Mode().IsRegular():
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = node{kind: "file", perm: st.Mode().Perm(), content: string(data)}
		default:
			out[rel] = node{kind: "other"}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// stats returns the FileInfo of every regular file below dir.
func stats(t *testing.T, dir string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	for rel, n := range snapshot(t, dir) {
		if n.kind == "file" {
			st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
			require.NoError(t, err)
			out[rel] = st
		}
	}
	return out
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(data)
}

func TestOpen(t *testing.T) {
	t.Chdir(t.TempDir())
	d, err := Open("a/b")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(d.Path()), d.Path())
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "a", "b"), d.Path())
	assert.DirExists(t, d.Path())

	again, err := Open(d.Path() + "/")
	require.NoError(t, err, "an existing directory opens")
	assert.Equal(t, d.Path(), again.Path())

	require.NoError(t, os.WriteFile("file", nil, 0o600))
	_, err = Open("file")
	assert.Error(t, err)
	_, err = Open("")
	assert.Error(t, err)
}

func TestPublishFirstThenIdentical(t *testing.T) {
	d := openDir(t)
	p := d.Path()
	b := bundleFor(d, "global\n# "+p+"/maps/host.map\n",
		map[string]string{"host.map": "a.example b1\n", "sub/path.map": "/x b2\n"},
		map[string]string{"errors/503.http": "HTTP/1.0 503\r\n\r\n"},
		map[string]string{"default.pem": "PRIVATE KEY\n"})

	res, err := d.Publish(b)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, []string{"certs/default.pem", "files/errors/503.http", "haproxy.cfg", "maps/host.map", "maps/sub/path.map"}, res.Written)
	assert.Empty(t, res.Removed)

	want := map[string]node{
		"haproxy.cfg":           {kind: "file", perm: 0o640, content: b.Config},
		"maps":                  {kind: "dir", perm: 0o750},
		"maps/host.map":         {kind: "file", perm: 0o640, content: "a.example b1\n"},
		"maps/sub":              {kind: "dir", perm: 0o750},
		"maps/sub/path.map":     {kind: "file", perm: 0o640, content: "/x b2\n"},
		"files":                 {kind: "dir", perm: 0o750},
		"files/errors":          {kind: "dir", perm: 0o750},
		"files/errors/503.http": {kind: "file", perm: 0o640, content: "HTTP/1.0 503\r\n\r\n"},
		"certs":                 {kind: "dir", perm: 0o750},
		"certs/default.pem":     {kind: "file", perm: 0o640, content: "PRIVATE KEY\n"},
	}
	assert.Equal(t, want, snapshot(t, p), "exactly the bundle, right modes, no temporary files")
	for _, f := range b.AllFiles() {
		if f.Kind != "" {
			assert.Equal(t, f.Content, readFile(t, p, strings.TrimPrefix(bundle.Path(p, f.Kind, f.Name), p+"/")), "where pathFor points")
		}
	}

	before := stats(t, p)
	res, err = d.Publish(b)
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.Empty(t, res.Written)
	assert.Empty(t, res.Removed)
	assert.Equal(t, want, snapshot(t, p), "no temporary files left")
	after := stats(t, p)
	require.Len(t, after, len(before))
	for rel, st := range before {
		assert.True(t, os.SameFile(st, after[rel]), "%s was not replaced", rel)
		assert.Equal(t, st.ModTime(), after[rel].ModTime(), rel)
	}
}

func TestPublishFixesModeWithoutRewrite(t *testing.T) {
	d := openDir(t)
	b := bundleFor(d, "global\n", map[string]string{"host.map": "x\n"}, nil, nil)
	_, err := d.Publish(b)
	require.NoError(t, err)
	p := filepath.Join(d.Path(), "maps", "host.map")
	require.NoError(t, os.Chmod(p, 0o644))
	require.NoError(t, os.Chmod(filepath.Join(d.Path(), "maps"), 0o755))
	before, err := os.Stat(p)
	require.NoError(t, err)

	res, err := d.Publish(b)
	require.NoError(t, err)
	assert.False(t, res.Changed)
	after, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), after.Mode().Perm())
	assert.True(t, os.SameFile(before, after), "the mode is fixed in place")
	st, err := os.Stat(filepath.Join(d.Path(), "maps"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o750), st.Mode().Perm())
}

func TestPublishWritesOnlyWhatChangedAndRemovesStale(t *testing.T) {
	d := openDir(t)
	p := d.Path()
	maps := map[string]string{"host.map": "a\n", "path.map": "p\n", "sub/old.map": "old\n"}
	_, err := d.Publish(bundleFor(d, "cfg1\n", maps, nil, map[string]string{"a.pem": "A"}))
	require.NoError(t, err)
	// Files that are not htc's, and leftovers of an interrupted run.
	writeFile(t, p, "master.sock", "placeholder")
	writeFile(t, p, "notes.txt", "keep me")
	writeFile(t, p, "other/x.map", "keep me too")
	writeFile(t, p, ".htc-tmp-crashed", "half")
	writeFile(t, p, "maps/.htc-tmp-crashed", "half")
	writeFile(t, p, "certs/manual.pem", "not in the bundle")
	before := stats(t, p)

	res, err := d.Publish(bundleFor(d, "cfg1\n",
		map[string]string{"host.map": "b\n", "path.map": "p\n"}, nil, map[string]string{"a.pem": "A"}))
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, []string{"maps/host.map"}, res.Written)
	assert.Equal(t, []string{"certs/manual.pem", "maps/sub/old.map"}, res.Removed, "leftover temporary files are not reported")

	after := snapshot(t, p)
	assert.Equal(t, "b\n", after["maps/host.map"].content)
	assert.NotContains(t, after, "maps/sub/old.map")
	assert.NotContains(t, after, "maps/sub", "the emptied directory is removed")
	assert.NotContains(t, after, "certs/manual.pem")
	assert.NotContains(t, after, ".htc-tmp-crashed")
	assert.NotContains(t, after, "maps/.htc-tmp-crashed")
	assert.Equal(t, node{kind: "dir", perm: 0o750}, after["certs"], "a managed directory stays when empty of stale files")
	for _, rel := range []string{"master.sock", "notes.txt", "other/x.map"} {
		assert.Equal(t, before[rel].Size(), int64(len(after[rel].content)), rel)
		assert.Contains(t, after, rel, "files that are not htc's stay")
	}
	st := stats(t, p)
	for _, rel := range []string{"haproxy.cfg", "maps/path.map", "certs/a.pem", "notes.txt"} {
		assert.True(t, os.SameFile(before[rel], st[rel]), "%s untouched", rel)
	}
	assert.False(t, os.SameFile(before["maps/host.map"], st["maps/host.map"]), "host.map replaced")
}

func TestPublishOrder(t *testing.T) {
	d := openDir(t)
	p := d.Path()
	_, err := d.Publish(bundleFor(d, "old\n", map[string]string{"a.map": "1", "stale.map": "s"}, nil, nil))
	require.NoError(t, err)

	newMaps := map[string]string{"a.map": "2", "b.map": "3"}
	newCerts := map[string]string{"c.pem": "4"}
	var order []string
	d.afterWrite = func(rel string) {
		order = append(order, rel)
		if rel != bundle.ConfigFileName {
			assert.Equal(t, "old\n", readFile(t, p, "haproxy.cfg"), "haproxy.cfg still old when %s is written", rel)
			return
		}
		for n, c := range newMaps {
			assert.Equal(t, c, readFile(t, p, "maps/"+n), "maps/%s in place before haproxy.cfg", n)
		}
		assert.Equal(t, "4", readFile(t, p, "certs/c.pem"))
		assert.FileExists(t, filepath.Join(p, "maps", "stale.map"), "stale files are removed after haproxy.cfg is written")
	}
	res, err := d.Publish(bundleFor(d, "new\n", newMaps, nil, newCerts))
	require.NoError(t, err)
	assert.Equal(t, []string{"maps/a.map", "maps/b.map", "certs/c.pem", "haproxy.cfg"}, order)
	assert.Equal(t, []string{"maps/stale.map"}, res.Removed)
	assert.NoFileExists(t, filepath.Join(p, "maps", "stale.map"))
}

func TestPublishRefusesBadBundles(t *testing.T) {
	tests := []struct {
		name   string
		bundle func(d *Dir) *bundle.Bundle
		errHas string
	}{
		{"parent directory", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", map[string]string{"../x": "x"}, nil, nil)
		}, `publish: map "../x"`},
		{"absolute", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", nil, map[string]string{"/etc/passwd": "x"}, nil)
		}, `publish: file "/etc/passwd"`},
		{"escaping", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", nil, nil, map[string]string{"a/../../x": "x"})
		}, `publish: cert "a/../../x"`},
		{"dot dot", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", map[string]string{"..": "x"}, nil, nil)
		}, `publish: map ".."`},
		{"empty name", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", map[string]string{"": "x"}, nil, nil)
		}, `publish: map ""`},
		{"temporary prefix", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", map[string]string{"ok.map": "x", "sub/.htc-tmp-x": "x"}, nil, nil)
		}, "reserved for temporary files"},
		{"file and directory at once", func(d *Dir) *bundle.Bundle {
			return bundleFor(d, "c", map[string]string{"a": "x", "a/b": "y"}, nil, nil)
		}, "publish: maps/a/b: maps/a is also a file"},
		{"other BaseDir", func(d *Dir) *bundle.Bundle {
			return &bundle.Bundle{BaseDir: "/tmp/htc-check-1", Config: "c"}
		}, "not for"},
		{"empty BaseDir", func(d *Dir) *bundle.Bundle {
			return &bundle.Bundle{Config: "c"}
		}, "not for"},
		{"nil", func(d *Dir) *bundle.Bundle { return nil }, "nil bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openDir(t)
			res, err := d.Publish(tt.bundle(d))
			require.Error(t, err)
			assert.Nil(t, res)
			assert.Contains(t, err.Error(), tt.errHas)
			assert.Empty(t, snapshot(t, d.Path()), "nothing written")
		})
	}
}

func TestPublishDoesNotFollowSymlinksOut(t *testing.T) {
	t.Run("maps is a link to outside", func(t *testing.T) {
		d, outside := openDir(t), t.TempDir()
		require.NoError(t, os.Symlink(outside, filepath.Join(d.Path(), "maps")))
		_, err := d.Publish(bundleFor(d, "c", map[string]string{"host.map": "x"}, nil, nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "publish: maps:")
		assert.Empty(t, snapshot(t, outside))
		assert.NoFileExists(t, filepath.Join(d.Path(), "haproxy.cfg"), "nothing written")
	})
	t.Run("a sub-directory is a link to outside", func(t *testing.T) {
		d, outside := openDir(t), t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(d.Path(), "maps"), 0o750))
		require.NoError(t, os.Symlink(outside, filepath.Join(d.Path(), "maps", "sub")))
		_, err := d.Publish(bundleFor(d, "c", map[string]string{"sub/host.map": "x"}, nil, nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "publish: maps/sub/host.map:")
		assert.Empty(t, snapshot(t, outside))
		assert.NoFileExists(t, filepath.Join(d.Path(), "haproxy.cfg"))
	})
	t.Run("the write itself goes through os.Root", func(t *testing.T) {
		d, outside := openDir(t), t.TempDir()
		require.NoError(t, os.Symlink(outside, filepath.Join(d.Path(), "maps")))
		root, err := os.OpenRoot(d.Path())
		require.NoError(t, err)
		defer func() { _ = root.Close() }()
		assert.Error(t, writeAtomic(root, "maps/host.map", []byte("x"), fileMode))
		assert.Error(t, mkdirs(root, "maps/sub", nil))
		assert.Empty(t, snapshot(t, outside))
	})
	t.Run("links to outside files are replaced or removed, never written through", func(t *testing.T) {
		d, outside := openDir(t), t.TempDir()
		writeFile(t, outside, "target", "outside")
		writeFile(t, outside, "other", "outside")
		require.NoError(t, os.MkdirAll(filepath.Join(d.Path(), "maps"), 0o750))
		require.NoError(t, os.Symlink(filepath.Join(outside, "target"), filepath.Join(d.Path(), "maps", "host.map")))
		require.NoError(t, os.Symlink(filepath.Join(outside, "other"), filepath.Join(d.Path(), "maps", "stale.map")))
		res, err := d.Publish(bundleFor(d, "c", map[string]string{"host.map": "new"}, nil, nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"maps/stale.map"}, res.Removed)
		assert.Equal(t, node{kind: "file", perm: fileMode, content: "new"}, snapshot(t, d.Path())["maps/host.map"])
		assert.NoFileExists(t, filepath.Join(d.Path(), "maps", "stale.map"))
		assert.Equal(t, "outside", readFile(t, outside, "target"))
		assert.Equal(t, "outside", readFile(t, outside, "other"))
	})
}

func TestPublishAtomicReads(t *testing.T) {
	d := openDir(t)
	big := func(tag string) string {
		return strings.Repeat(fmt.Sprintf("# padding line of bundle %s\n", tag), (1<<20)/20+1)
	}
	contents := [2]string{big("A"), big("B")}
	require.GreaterOrEqual(t, len(contents[0]), 1<<20)
	require.NotEqual(t, contents[0], contents[1])
	_, err := d.Publish(bundleFor(d, contents[0], nil, nil, nil))
	require.NoError(t, err)

	cfg := filepath.Join(d.Path(), "haproxy.cfg")
	stop := make(chan struct{})
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(cfg)
			if err != nil {
				continue
			}
			reads.Add(1)
			if s := string(data); s != contents[0] && s != contents[1] {
				bad.Add(1)
			}
		}
	}()
	for i := 1; i <= 50; i++ {
		res, err := d.Publish(bundleFor(d, contents[i%2], nil, nil, nil))
		require.NoError(t, err)
		require.Equal(t, []string{"haproxy.cfg"}, res.Written)
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, bad.Load(), "reads that saw a partial haproxy.cfg, out of %d", reads.Load())
}

// TestRepublishRepairs: a directory edited by hand is put back by the next
// Publish of the same bundle, which reports what it wrote or removed; an
// intact directory is reported unchanged.
func TestRepublishRepairs(t *testing.T) {
	d := openDir(t)
	p := d.Path()
	b := bundleFor(d, "cfg\n", map[string]string{"sub/a.map": "a"}, nil, map[string]string{"c.pem": "c"})
	_, err := d.Publish(b)
	require.NoError(t, err)

	tests := []struct {
		name             string
		change           func(t *testing.T)
		written, removed []string
	}{
		{"edited map", func(t *testing.T) { writeFile(t, p, "maps/sub/a.map", "edited") }, []string{"maps/sub/a.map"}, nil},
		{"edited haproxy.cfg", func(t *testing.T) { writeFile(t, p, "haproxy.cfg", "cfg\n#") }, []string{"haproxy.cfg"}, nil},
		{"missing cert", func(t *testing.T) { require.NoError(t, os.Remove(filepath.Join(p, "certs", "c.pem"))) }, []string{"certs/c.pem"}, nil},
		{"stale file", func(t *testing.T) { writeFile(t, p, "files/stale", "s") }, nil, []string{"files/stale"}},
		{"stale link", func(t *testing.T) { require.NoError(t, os.Symlink("a.map", filepath.Join(p, "maps", "sub", "l"))) }, nil, []string{"maps/sub/l"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change(t)
			res, err := d.Publish(b)
			require.NoError(t, err)
			assert.True(t, res.Changed)
			assert.Equal(t, tt.written, res.Written)
			assert.Equal(t, tt.removed, res.Removed)
			res, err = d.Publish(b)
			require.NoError(t, err)
			assert.False(t, res.Changed, "repaired")
		})
	}

	// Files that are not htc's stay and do not count; temporary leftovers
	// are cleaned up without counting as a change.
	writeFile(t, p, "notes.txt", "n")
	writeFile(t, p, "maps/.htc-tmp-x", "half")
	res, err := d.Publish(b)
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.FileExists(t, filepath.Join(p, "notes.txt"))
	assert.NoFileExists(t, filepath.Join(p, "maps", ".htc-tmp-x"))
}
