package dataplane

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// refusingDel answers every command, but refuses "del server" as HAProxy
// 3.0 does while the server has a stream: the first refusals times with
// answer, then for good when refusals is negative.
type refusingDel struct {
	mu        sync.Mutex
	refusals  int
	answer    string
	commands  []string
	delServer int
}

func (r *refusingDel) Do(_ context.Context, cmd, _ string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commands = append(r.commands, cmd)
	if !strings.HasPrefix(cmd, "del server ") {
		return "", nil
	}
	r.delServer++
	if r.refusals < 0 || r.delServer <= r.refusals {
		return "", &master.CommandError{Command: cmd, Answer: r.answer}
	}
	return "Server deleted.", nil
}

const stillConnectedAnswer = "Server still has connections attached to it, cannot remove it."

// TestRemovingAServerWaitsForItsStreams: a server removed while a stream
// it serves is open is deleted once HAProxy lets it go; another refusal,
// or one that lasts past the wait, fails the removal (the caller reloads).
func TestRemovingAServerWaitsForItsStreams(t *testing.T) {
	tests := []struct {
		name      string
		refusals  int
		answer    string
		wait      time.Duration
		ok        bool
		delServer int
	}{
		{"deleted at once", 0, stillConnectedAnswer, time.Second, true, 1},
		{"deleted once its streams ended", 3, stillConnectedAnswer, time.Second, true, 4},
		{"another refusal is not waited on", 3, "Only servers in maintenance mode can be deleted.", time.Second, false, 1},
		{"streams that outlast the wait", -1, stillConnectedAnswer, 30 * time.Millisecond, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &refusingDel{refusals: tt.refusals, answer: tt.answer}
			err := delServer(context.Background(), c, "be/s1", tt.wait)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				var refused *master.CommandError
				require.ErrorAs(t, err, &refused, "the last refusal is returned")
			}
			if tt.delServer > 0 {
				assert.Equal(t, tt.delServer, c.delServer, "del server sent")
			} else {
				assert.Greater(t, c.delServer, 2, "asked again while the wait lasted")
			}
		})
	}
}

// TestRemovingAServerSetsItToMaintenanceFirst: the removal's commands in
// order, a refusal for a stream waited out.
func TestRemovingAServerSetsItToMaintenanceFirst(t *testing.T) {
	c := &refusingDel{refusals: 1, answer: stillConnectedAnswer}
	require.NoError(t, ServerChange{Backend: "be", Server: "s1", Op: OpRemove}.apply(context.Background(), c))
	assert.Equal(t, []string{"set server be/s1 state maint", "del server be/s1", "del server be/s1"}, c.commands)
}

// TestRemovingAServerStopsWhenTheContextEnds: a removal waiting for
// streams ends with its context.
func TestRemovingAServerStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &refusingDel{refusals: -1, answer: stillConnectedAnswer}
	require.Error(t, delServer(ctx, c, "be/s1", time.Hour))
	assert.Equal(t, 1, c.delServer)
}
