package master

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnectionsEndedBeforeTheirAnswerAreCountedAsAbandoned: a command
// whose answer never ends (a master that froze it), through Command or a
// worker session, counts one abandoned connection; complete answers,
// refused commands and a master that cannot be reached count none.
func TestConnectionsEndedBeforeTheirAnswerAreCountedAsAbandoned(t *testing.T) {
	handle := func(cmd string) reply {
		switch {
		case cmd == "prompt":
			return reply{text: "\nmaster> "}
		case cmd == "@1":
			return reply{text: "\n10> "}
		case cmd == "show proc":
			return reply{text: showProc26}
		case strings.HasPrefix(cmd, "show map"):
			return reply{text: "0x1 a.example be\n0x2 b.exa", hang: true} // frozen midway
		case strings.HasPrefix(cmd, "set server"):
			return reply{text: "[3]: No such server.\n\n10> "}
		default:
			return reply{text: "\n10> "}
		}
	}
	f := startFake(t, handle)
	c := &Client{SocketPath: f.path, CommandTimeout: 200 * time.Millisecond}
	ctx := context.Background()

	_, err := c.ShowProc(ctx)
	require.NoError(t, err)
	s, err := c.OpenWorker(ctx)
	require.NoError(t, err)
	_, err = s.Do(ctx, "set severity-output number", "")
	require.NoError(t, err)
	_, err = s.Do(ctx, "set server be/nope weight 1", "")
	var ce *CommandError
	require.ErrorAs(t, err, &ce, "a refusal is a complete answer")
	assert.Zero(t, c.Abandoned(), "every answer so far ended")

	_, err = s.Do(ctx, "show map hosts.map", "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(1), c.Abandoned(), "the session ended inside an answer")
	_, err = s.Do(ctx, "show map hosts.map", "")
	require.Error(t, err, "the session is closed")
	assert.Equal(t, int64(1), c.Abandoned(), "a closed session sends nothing more")

	hung := startFake(t, func(string) reply { return reply{hang: true} })
	_, err = (&Client{SocketPath: hung.path, CommandTimeout: 100 * time.Millisecond}).ShowProc(ctx)
	require.Error(t, err)
	other := &Client{SocketPath: hung.path, CommandTimeout: 100 * time.Millisecond}
	_, err = other.Command(ctx, "show proc")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(1), other.Abandoned(), "Command counts a cut answer too")

	gone := &Client{SocketPath: f.path + ".none", CommandTimeout: 100 * time.Millisecond}
	_, err = gone.ShowProc(ctx)
	require.Error(t, err)
	assert.Zero(t, gone.Abandoned(), "no connection, nothing held")
}

// TestIntegrationAReloadFreesTheMastersConnections: HAProxy 3.0's master
// CLI serves 10 connections at a time and never times one out, so
// connections it never finishes (Abandoned) would shut it for good; a
// reload re-executes the master and frees them all. Here 10 sessions held
// open stand for them: the master answers no one else until one ends; after
// a reload they are closed, and 10 new ones are served at once.
func TestIntegrationAReloadFreesTheMastersConnections(t *testing.T) {
	h := startHAProxy(t, haproxyBinary(t))
	c := h.client()
	ctx := context.Background()
	const slots = 10 // mworker_cli_proxy_create(): maxconn 10
	var held []*WorkerSession
	t.Cleanup(func() {
		for _, s := range held {
			s.Close()
		}
	})
	for range slots {
		s, err := c.OpenWorker(ctx)
		require.NoError(t, err)
		held = append(held, s)
	}
	c.CommandTimeout = 500 * time.Millisecond
	_, err := c.ShowProc(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "every connection slot of the master is taken")
	assert.Equal(t, int64(1), c.Abandoned())
	c.CommandTimeout = 5 * time.Second

	held[slots-1].Close() // one slot for the reload's connections, one at a time
	held = held[:slots-1]
	_, err = c.Reload(ctx)
	require.NoError(t, err)
	assert.Zero(t, c.Abandoned(), "the reload freed what was abandoned before it")
	for i, s := range held {
		_, err := s.Do(ctx, "show info", "")
		require.Error(t, err, "held session %d outlived the master's re-execution", i)
	}

	var fresh []*WorkerSession
	t.Cleanup(func() {
		for _, s := range fresh {
			s.Close()
		}
	})
	for i := range slots {
		s, err := c.OpenWorker(ctx)
		require.NoError(t, err, "session %d after the reload", i)
		fresh = append(fresh, s)
	}
}
