package testcluster

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
)

// A second session waits for the lock while the first holds it, says who
// holds it, gives up when its context ends, and gets it once the first
// released it.
func TestLockTakesTurns(t *testing.T) {
	dir := t.TempDir()
	lockFile, owner := filepath.Join(dir, "cluster.lock"), filepath.Join(dir, "cluster.owner")
	first, err := takeLock(t.Context(), lockFile, owner, nil)
	require.NoError(t, err)

	log := &testutil.SyncBuffer{}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, err = takeLock(ctx, lockFile, owner, log)
	require.Error(t, err, "the lock is held")
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Contains(t, err.Error(), "testcluster.test", "the error names the holder")
	assert.Contains(t, log.String(), "waiting for the cluster lock")

	c := &Cluster{lock: first}
	c.release()
	second, err := takeLock(t.Context(), lockFile, owner, log)
	require.NoError(t, err, "the released lock is taken")
	(&Cluster{lock: second}).release()
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"abc"}, 5, "abc"},
		{[]string{"abc", "defg"}, 5, "cdefg"},
		{[]string{strings.Repeat("x", 10)}, 3, "xxx"},
	} {
		b := &tailBuffer{max: tc.max}
		for _, w := range tc.writes {
			n, err := b.Write([]byte(w))
			require.NoError(t, err)
			assert.Equal(t, len(w), n)
		}
		assert.Equal(t, tc.want, b.String())
	}
}
