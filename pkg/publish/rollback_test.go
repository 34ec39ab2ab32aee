package publish

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

func TestRollback(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, d *Dir) // the state before Publish
		next  func(d *Dir) *bundle.Bundle
	}{
		{
			name:  "first publish into an empty directory",
			setup: func(*testing.T, *Dir) {},
			next: func(d *Dir) *bundle.Bundle {
				return bundleFor(d, "cfg\n", map[string]string{"a/b.map": "x"}, map[string]string{"f": "y"}, nil)
			},
		},
		{
			name: "changed, added and removed files",
			setup: func(t *testing.T, d *Dir) {
				_, err := d.Publish(bundleFor(d, "cfg1\n",
					map[string]string{"host.map": "h1", "sub/old.map": "o"}, nil, map[string]string{"a.pem": "A"}))
				require.NoError(t, err)
				writeFile(t, d.Path(), "notes.txt", "n")
			},
			next: func(d *Dir) *bundle.Bundle {
				return bundleFor(d, "cfg2\n",
					map[string]string{"host.map": "h2", "new.map": "n"}, map[string]string{"x/y.http": "y"}, map[string]string{"a.pem": "A"})
			},
		},
		{
			name: "a file where the bundle now has a directory",
			setup: func(t *testing.T, d *Dir) {
				_, err := d.Publish(bundleFor(d, "cfg1\n", map[string]string{"a": "file a", "k": "k"}, nil, nil))
				require.NoError(t, err)
			},
			next: func(d *Dir) *bundle.Bundle {
				return bundleFor(d, "cfg2\n", map[string]string{"a/b": "file a/b", "k": "k"}, nil, nil)
			},
		},
		{
			name: "a directory where the bundle now has a file",
			setup: func(t *testing.T, d *Dir) {
				_, err := d.Publish(bundleFor(d, "cfg1\n", map[string]string{"a/b": "1", "a/c/d": "2"}, nil, nil))
				require.NoError(t, err)
				require.NoError(t, os.Mkdir(filepath.Join(d.Path(), "maps", "a", "empty"), 0o750))
			},
			next: func(d *Dir) *bundle.Bundle {
				return bundleFor(d, "cfg2\n", map[string]string{"a": "now a file"}, nil, nil)
			},
		},
		{
			name: "symbolic links and odd modes come back",
			setup: func(t *testing.T, d *Dir) {
				writeFile(t, d.Path(), "other.cfg", "other")
				require.NoError(t, os.Symlink("other.cfg", filepath.Join(d.Path(), "haproxy.cfg")))
				writeFile(t, d.Path(), "maps/m", "m")
				require.NoError(t, os.Chmod(filepath.Join(d.Path(), "maps", "m"), 0o600))
				require.NoError(t, os.Symlink("m", filepath.Join(d.Path(), "maps", "link")))
			},
			next: func(d *Dir) *bundle.Bundle {
				return bundleFor(d, "cfg2\n", map[string]string{"m": "m2"}, nil, nil)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openDir(t)
			tt.setup(t, d)
			before := snapshot(t, d.Path())
			b := tt.next(d)

			res, err := d.Publish(b)
			require.NoError(t, err)
			require.True(t, res.Changed)
			again, err := d.Publish(b)
			require.NoError(t, err)
			require.False(t, again.Changed, "published")
			assert.NotEqual(t, before, snapshot(t, d.Path()))

			require.NoError(t, res.Rollback())
			assert.Equal(t, before, snapshot(t, d.Path()), "back to the state before Publish")
			require.NoError(t, res.Rollback(), "a second Rollback is a no-op")
			assert.Equal(t, before, snapshot(t, d.Path()))
		})
	}
}

func TestRollbackWithoutChange(t *testing.T) {
	d := openDir(t)
	b := bundleFor(d, "cfg\n", map[string]string{"a.map": "a"}, nil, nil)
	_, err := d.Publish(b)
	require.NoError(t, err)
	before := stats(t, d.Path())

	res, err := d.Publish(b)
	require.NoError(t, err)
	require.False(t, res.Changed)
	require.NoError(t, res.Rollback())
	after := stats(t, d.Path())
	require.Len(t, after, len(before))
	for rel, st := range before {
		assert.True(t, os.SameFile(st, after[rel]), rel)
	}
	assert.NoError(t, (*Result)(nil).Rollback())
	assert.NoError(t, (&Result{}).Rollback())
}

func TestPublishFailureRollsBack(t *testing.T) {
	d := openDir(t)
	p := d.Path()
	_, err := d.Publish(bundleFor(d, "cfg1\n", map[string]string{"a.map": "1"}, nil, nil))
	require.NoError(t, err)
	before := snapshot(t, p)

	// After the map is written, something makes haproxy.cfg unwritable.
	d.afterWrite = func(rel string) {
		if rel == "maps/a.map" {
			require.NoError(t, os.Remove(filepath.Join(p, "haproxy.cfg")))
			writeFile(t, p, "haproxy.cfg/blocker", "x")
		}
	}
	res, err := d.Publish(bundleFor(d, "cfg2\n", map[string]string{"a.map": "2", "b.map": "3"}, nil, nil))
	require.Error(t, err)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "publish: haproxy.cfg:")
	after := snapshot(t, p)
	assert.Equal(t, before["maps/a.map"], after["maps/a.map"], "the map written before the failure is rolled back")
	assert.NotContains(t, after, "maps/b.map")
	for rel := range after {
		assert.False(t, isTemp(rel), "temporary file %s left", rel)
	}
}
