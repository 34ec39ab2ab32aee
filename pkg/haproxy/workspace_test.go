package haproxy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorkspace(t *testing.T) {
	parent := t.TempDir()
	ws, err := NewWorkspace(parent)
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(ws.Dir()))
	assert.Equal(t, parent, filepath.Dir(ws.Dir()))
	st, err := os.Stat(ws.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	other, err := NewWorkspace(parent)
	require.NoError(t, err)
	assert.NotEqual(t, ws.Dir(), other.Dir())

	require.NoError(t, ws.Remove())
	assert.NoDirExists(t, ws.Dir())
	require.NoError(t, other.Remove())
}

func TestNameableDirRefusesBytesTheConfigParserReadsSpecially(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want string // "" means nameable
	}{
		{dir: "/tmp/htc-check", want: ""},
		{dir: "/var/lib/htc_out-1.2/x@y", want: ""},
		{dir: "/tmp/hash#dir", want: `'#'`},
		{dir: "/tmp/with space", want: `' '`},
		{dir: "/tmp/tab\there", want: `'\t'`},
		{dir: `/tmp/q"uote`, want: `'"'`},
		{dir: "/tmp/q'uote", want: `'\''`},
		{dir: `/tmp/back\slash`, want: `'\\'`},
		{dir: "/tmp/$HOME", want: `'$'`},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			err := NameableDir(tc.dir)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want+" in its path")
		})
	}
}

func TestNewCheckerRefusesATemporaryDirectoryTheConfigCannotName(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "a#b")
	require.NoError(t, os.Mkdir(parent, 0o700))
	_, err := NewChecker(Options{HAProxyPath: os.Args[0], TempDir: parent})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "temporary directory (TMPDIR)")
	assert.Contains(t, err.Error(), `'#' in its path`)
}
