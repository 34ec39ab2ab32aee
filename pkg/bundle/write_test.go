package bundle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	b := &Bundle{
		BaseDir: dir,
		Config:  "global\n",
		Maps:    map[string]string{"host.map": "a b\n"},
		Files:   map[string]string{"errors/503.http": "HTTP/1.0 503\r\n\r\n"},
		Certs:   map[string]string{"default.pem": "PEM"},
	}
	require.NoError(t, Write(dir, b))
	for _, f := range b.AllFiles() {
		rel, want := f.RelPath, f.Content
		p := filepath.Join(dir, rel)
		if f.Kind != "" {
			assert.Equal(t, Path(dir, f.Kind, f.Name), p, "written where pathFor points")
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err, rel)
		assert.Equal(t, want, string(data), rel)
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), rel)
	}
	st, err := os.Stat(filepath.Join(dir, "files", "errors"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	// Rewriting truncates.
	b.Config = "g\n"
	require.NoError(t, Write(dir, b))
	data, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg"))
	require.NoError(t, err)
	assert.Equal(t, "g\n", string(data))
}

func TestWriteRefusesEscapes(t *testing.T) {
	for _, name := range []string{"../evil", "/etc/evil", "a/../../evil", ".."} {
		dir := t.TempDir()
		err := Write(dir, &Bundle{BaseDir: dir, Config: "x", Files: map[string]string{name: "x"}})
		assert.Error(t, err, name)
		assert.NoFileExists(t, filepath.Join(dir, "haproxy.cfg"), "nothing is written when a name is refused")
	}

	// A symlink planted in the directory cannot redirect a write outside it.
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "maps")))
	err := Write(dir, &Bundle{BaseDir: dir, Config: "x", Maps: map[string]string{"host.map": "x"}})
	assert.Error(t, err)
	assert.NoFileExists(t, filepath.Join(outside, "host.map"))
}
