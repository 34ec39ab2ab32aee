package master

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIntegrationWorkerSession runs runtime commands on the real HAProxy's
// current worker through the master CLI: answers, errors told apart by
// their severity, payloads sent as written, and a session that a reload
// closed.
func TestIntegrationWorkerSession(t *testing.T) {
	bin := haproxyBinary(t)
	h := startHAProxy(t, bin)
	mapFile := filepath.Join(filepath.Dir(h.cfg), "hosts.map")
	require.NoError(t, os.WriteFile(mapFile, []byte("a.example be\n"), 0o600))
	cfg := haproxyConfig(h.addr, "v1", false) + fmt.Sprintf(`    http-request set-var(txn.be) req.hdr(host),map(%s)
backend be
    server s1 127.0.0.1:9 weight 2
`, mapFile)
	require.NoError(t, os.WriteFile(h.cfg, []byte(cfg), 0o600))
	c := h.client()
	ctx := context.Background()
	_, err := c.Reload(ctx)
	require.NoError(t, err)

	s, err := c.OpenWorker(ctx)
	require.NoError(t, err)
	defer s.Close()
	st, err := c.ShowProc(ctx)
	require.NoError(t, err)
	assert.Equal(t, st.WorkerPIDs(), []int{s.PID()}, "the session talks to the current worker")

	out, err := s.Do(ctx, "show servers state be", "")
	require.NoError(t, err)
	assert.Contains(t, out, "be 1 s1 127.0.0.1 ")

	_, err = s.Do(ctx, "set server be/nope weight 1", "")
	var ce *CommandError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "set server be/nope weight 1", ce.Command)
	assert.Equal(t, "No such server.", ce.Answer)

	out, err = s.Do(ctx, "set server be/s1 weight 3", "")
	require.NoError(t, err, "a success after an error: the answers stay in step")
	assert.Empty(t, out)

	out, err = s.Do(ctx, "prepare map "+mapFile, "")
	require.NoError(t, err)
	ver := strings.TrimPrefix(out, "New version created: ")
	// Lines that would mean something to the master CLI outside a payload.
	payload := "@1 x\nquit y\nprompt z\na;b c;d\n"
	_, err = s.Do(ctx, "add map @"+ver+" "+mapFile, payload)
	require.NoError(t, err)
	out, err = s.Do(ctx, "show map @"+ver+" "+mapFile, "")
	require.NoError(t, err)
	var got []string
	for l := range strings.Lines(out) {
		_, entry, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		got = append(got, entry)
	}
	assert.Equal(t, []string{"@1 x", "quit y", "prompt z", "a;b c;d"}, got, "the payload reaches the worker as written")

	_, err = s.Do(ctx, "add map @"+ver+" "+mapFile, "a b\n\nc d\n")
	require.ErrorContains(t, err, "empty line", "refused before anything is sent")

	_, err = c.Reload(ctx)
	require.NoError(t, err)
	_, err = s.Do(ctx, "show servers state be", "")
	require.Error(t, err, "a reload closes the master CLI's connections")
	_, err = s.Do(ctx, "show servers state be", "")
	require.ErrorContains(t, err, "closed")

	cctx, cancel := context.WithCancel(ctx)
	s2, err := c.OpenWorker(cctx)
	require.NoError(t, err)
	defer s2.Close()
	cancel()
	_, err = s2.Do(cctx, "show info", "")
	require.ErrorIs(t, err, context.Canceled)
}
