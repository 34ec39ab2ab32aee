package master

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortTempDir returns a new directory short enough for unix socket paths
// (< 108 bytes), removed when the test ends. t.TempDir() embeds the test
// name and can be too long.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "htcm")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// reply is what the fake master does with one command.
type reply struct {
	text string // written back
	hang bool   // then keep the connection open, reading nothing more, until the test ends
}

// fakeMaster is an in-process stand-in for HAProxy's master CLI: it reads
// command lines, answers each through handle and closes the connection on
// "quit", like HAProxy.
type fakeMaster struct {
	path string

	mu   sync.Mutex
	cmds []string
}

func startFake(t *testing.T, handle func(cmd string) reply) *fakeMaster {
	t.Helper()
	f := &fakeMaster{path: filepath.Join(shortTempDir(t), "master.sock")}
	ln, err := net.Listen("unix", f.path)
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.serve(conn, handle, done)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		_ = ln.Close()
		wg.Wait()
	})
	return f
}

func (f *fakeMaster) serve(conn net.Conn, handle func(string) reply, done <-chan struct{}) {
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			_ = conn.Close()
		case <-stop:
		}
	}()
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		f.mu.Lock()
		f.cmds = append(f.cmds, cmd)
		f.mu.Unlock()
		if cmd == "quit" {
			return
		}
		rep := handle(cmd)
		if _, err := io.WriteString(conn, rep.text); err != nil {
			return
		}
		if rep.hang {
			<-done
			return
		}
	}
}

func (f *fakeMaster) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

func (f *fakeMaster) count(cmd string) int {
	n := 0
	for _, c := range f.received() {
		if c == cmd {
			n++
		}
	}
	return n
}

func TestCommandSendsQuit(t *testing.T) {
	// The fake closes the connection only on "quit", so without it Command
	// would run into its timeout.
	f := startFake(t, func(cmd string) reply {
		if cmd == "show proc" {
			return reply{text: showProc26}
		}
		return reply{text: "Unknown command\n"}
	})
	c := &Client{SocketPath: f.path, CommandTimeout: 2 * time.Second}

	out, err := c.Command(context.Background(), "show proc")
	require.NoError(t, err, "without quit the answer would end in the timeout, an error")
	assert.Equal(t, showProc26, out)
	assert.Equal(t, []string{"show proc", "quit"}, f.received())

	st, err := c.ShowProc(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2207, st.Master.PID)
	assert.Equal(t, 1, st.Master.Reloads)
	assert.Equal(t, []int{2656}, st.WorkerPIDs())
}

func TestCommandRejectsMultipleLines(t *testing.T) {
	f := startFake(t, func(string) reply { return reply{} })
	c := &Client{SocketPath: f.path}
	for _, cmd := range []string{"show proc\nreload", "reload\r"} {
		_, err := c.Command(context.Background(), cmd)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "single line")
	}
	assert.Empty(t, f.received(), "nothing may be sent")
}

func TestShowProcUnexpectedAnswer(t *testing.T) {
	f := startFake(t, func(string) reply { return reply{text: "Unknown command\n"} })
	c := &Client{SocketPath: f.path}
	_, err := c.ShowProc(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "master socket "+f.path+": show proc")
}

func TestCommandTimeouts(t *testing.T) {
	tests := []struct {
		name   string
		handle func(string) reply
	}{
		{"never answers", func(string) reply { return reply{hang: true} }},
		{"answers but never closes", func(string) reply { return reply{text: showProc26, hang: true} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, tt.handle)
			c := &Client{SocketPath: f.path, CommandTimeout: 200 * time.Millisecond}
			start := time.Now()
			_, err := c.Command(context.Background(), "show proc")
			elapsed := time.Since(start)
			require.Error(t, err)
			assert.GreaterOrEqual(t, elapsed, 150*time.Millisecond)
			assert.Less(t, elapsed, 2*time.Second)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			var ne net.Error
			if assert.ErrorAs(t, err, &ne) {
				assert.True(t, ne.Timeout())
			}
			assert.Contains(t, err.Error(), "master socket "+f.path+": show proc: ")
		})
	}
}

func TestCommandContext(t *testing.T) {
	f := startFake(t, func(string) reply { return reply{hang: true} })
	c := &Client{SocketPath: f.path, CommandTimeout: time.Minute}

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := c.Command(ctx, "show proc")
		require.Error(t, err)
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Command(ctx, "show proc")
		require.Error(t, err)
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestCommandNoMaster(t *testing.T) {
	dir := shortTempDir(t)

	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())

	tests := []struct {
		name string
		path string
		want error
	}{
		{"missing socket", filepath.Join(dir, "missing.sock"), fs.ErrNotExist},
		{"nobody listening", stale, syscall.ECONNREFUSED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{SocketPath: tt.path}
			for name, call := range map[string]func() error{
				"Command":  func() error { _, err := c.Command(context.Background(), "show proc"); return err },
				"ShowProc": func() error { _, err := c.ShowProc(context.Background()); return err },
				"Reload":   func() error { _, err := c.Reload(context.Background()); return err },
			} {
				err := call()
				require.Error(t, err, name)
				assert.ErrorIs(t, err, tt.want, name)
				assert.Contains(t, err.Error(), "master socket "+tt.path+": connect: ", name)
				assert.Equal(t, 1, strings.Count(err.Error(), tt.path), "the path is named once: %v", err)
			}
		})
	}

	_, err = (&Client{}).Command(context.Background(), "show proc")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SocketPath is empty")
}
