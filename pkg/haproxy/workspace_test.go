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
