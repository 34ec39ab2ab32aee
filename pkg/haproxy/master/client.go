package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults used for the zero-valued duration fields of Client.
const (
	// DefaultCommandTimeout bounds one command: connect, write and read.
	DefaultCommandTimeout = 5 * time.Second
	// DefaultReloadTimeout bounds how long Reload waits for a reload.
	DefaultReloadTimeout = 30 * time.Second
	// DefaultPollInterval is the pause between two `show proc` while Reload
	// waits.
	DefaultPollInterval = 50 * time.Millisecond
)

// settleIdle is how long an answer that has announced its outcome
// ("Success=1") may stay silent before it is taken as complete, for masters
// that keep the connection open after answering a reload.
const settleIdle = 500 * time.Millisecond

// Client talks to one HAProxy master CLI socket. The zero value is not
// usable; set SocketPath. A Client holds no connection between calls and its
// methods may be called from several goroutines, but Reload calls on the same
// socket should not overlap: a reload counted by the master could not be told
// apart from another caller's. A Client must not be copied after first use.
type Client struct {
	// SocketPath is the unix socket given to haproxy -S.
	SocketPath string
	// CommandTimeout bounds one command (connect, write and read); 0 means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
	// ReloadTimeout is how long Reload waits for the reload to finish; 0
	// means DefaultReloadTimeout.
	ReloadTimeout time.Duration
	// PollInterval is the pause between two `show proc` while Reload waits;
	// 0 means DefaultPollInterval.
	PollInterval time.Duration

	// abandoned counts connections that ended before their answer did
	// since the last reload (see Abandoned).
	abandoned atomic.Int64
}

// Abandoned is the number of connections to the master that ended before
// their answer did (a timeout, a cancellation, a broken connection) since
// the last successful Reload. Each may hold one of the master's connection
// slots for good: HAProxy 3.0's master CLI accepts 10 connections and has
// no timeout, it can freeze an answer it relays from a worker (haproxy
// issue 3070, fixed after 3.0.11), and a connection closed while a worker
// still answers may stay counted. Ten of them and the master answers
// nothing, reloads included. A reload re-executes the master, which frees
// them all: a caller that sees Abandoned() > 0 should reload while it
// still can.
func (c *Client) Abandoned() int64 { return c.abandoned.Load() }

func (c *Client) commandTimeout() time.Duration {
	if c.CommandTimeout > 0 {
		return c.CommandTimeout
	}
	return DefaultCommandTimeout
}

func (c *Client) reloadTimeout() time.Duration {
	if c.ReloadTimeout > 0 {
		return c.ReloadTimeout
	}
	return DefaultReloadTimeout
}

func (c *Client) pollInterval() time.Duration {
	if c.PollInterval > 0 {
		return c.PollInterval
	}
	return DefaultPollInterval
}

// Command sends one command line followed by "quit" on a new connection and
// returns the master's answer, read until the master closes the connection.
// The exchange is bounded by CommandTimeout and ctx. cmd must be a single
// line. The answer is returned as is; HAProxy reports unknown commands in it,
// not as an error.
func (c *Client) Command(ctx context.Context, cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\r\n") {
		return "", fmt.Errorf("master socket %s: command %q: must be a single line", c.SocketPath, cmd)
	}
	answer, _, err := c.exchange(ctx, cmd, c.commandTimeout(), nil)
	return answer, err
}

// ShowProc runs `show proc` and parses the answer.
func (c *Client) ShowProc(ctx context.Context) (*Status, error) {
	out, err := c.Command(ctx, "show proc")
	if err != nil {
		return nil, err
	}
	st, err := ParseShowProc(out)
	if err != nil {
		return nil, fmt.Errorf("master socket %s: %w", c.SocketPath, err)
	}
	return st, nil
}

// exchange sends cmd and "quit" and reads the answer until EOF, within
// timeout and ctx. sent reports whether the command was written, i.e. whether
// the master may have acted on it. If settled is not nil and returns true for
// the answer read so far, the answer is complete once the master stays silent
// for settleIdle, even if it does not close the connection.
func (c *Client) exchange(ctx context.Context, cmd string, timeout time.Duration, settled func(answer []byte) bool) (answer string, sent bool, err error) {
	if c.SocketPath == "" {
		return "", false, errors.New("master: Client.SocketPath is empty")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.SocketPath)
	if err != nil {
		return "", false, c.wrap(ctx, "", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline() // always set: WithTimeout
	if err := conn.SetDeadline(deadline); err != nil {
		return "", false, c.wrap(ctx, cmd, err)
	}
	// Cancellation (rather than a deadline) must interrupt a blocked read too.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := io.WriteString(conn, cmd+"\nquit\n"); err != nil {
		c.abandoned.Add(1)
		return "", false, c.wrap(ctx, cmd, err)
	}

	var buf []byte
	chunk := make([]byte, 4096)
	idle := false
	for {
		n, rerr := conn.Read(chunk)
		buf = append(buf, chunk[:n]...)
		switch {
		case errors.Is(rerr, io.EOF):
			return string(buf), true, nil
		case rerr != nil:
			if idle && ctx.Err() == nil && isTimeout(rerr) {
				return string(buf), true, nil
			}
			c.abandoned.Add(1)
			return string(buf), true, c.wrap(ctx, cmd, rerr)
		}
		if settled != nil && !idle && settled(buf) {
			idle = true
		}
		if idle && ctx.Err() == nil {
			_ = conn.SetReadDeadline(earliest(time.Now().Add(settleIdle), deadline))
		}
	}
}

// wrap names the socket (and command) in err and makes sure a context error
// that caused it can be found with errors.Is.
func (c *Client) wrap(ctx context.Context, cmd string, err error) error {
	prefix := "master socket " + c.SocketPath
	if cmd != "" {
		prefix += ": " + cmd
	}
	// A failed dial names the socket again ("dial unix PATH: connect: ...");
	// keep its cause ("connect: no such file or directory"), which still
	// matches fs.ErrNotExist or syscall.ECONNREFUSED with errors.Is.
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" && op.Err != nil {
		err = op.Err
	}
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); cerr == nil && ok && isTimeout(err) && !time.Now().Before(dl) {
		// The connection's deadline (set to the context's) fired before
		// the context noticed its own.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%s: %w (%w)", prefix, cerr, err)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
