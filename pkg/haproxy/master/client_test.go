package master

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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

// procText renders a `show proc` answer in HAProxy 2.6's format.
func procText(masterPID, reloads, failed int, workers ...int) string {
	var b strings.Builder
	b.WriteString("#<PID>          <type>          <reloads>       <uptime>        <version>      \n")
	fmt.Fprintf(&b, "%-15d master          %d [failed: %d]   0d00h00m10s     2.6.12-1+deb12u4\n", masterPID, reloads, failed)
	b.WriteString("# workers\n")
	for _, w := range workers {
		fmt.Fprintf(&b, "%-15d worker          0               0d00h00m01s     2.6.12-1+deb12u4\n", w)
	}
	b.WriteString("# programs\n\n")
	return b.String()
}

// scripted returns a fake master handler that answers `show proc` with
// before until it gets "reload", answers that with onReload, and then
// answers `show proc` with after in turn, repeating the last one.
func scripted(before string, onReload reply, after ...reply) func(string) reply {
	var mu sync.Mutex
	reloaded := false
	next := 0
	return func(cmd string) reply {
		mu.Lock()
		defer mu.Unlock()
		switch cmd {
		case "show proc":
			if !reloaded || len(after) == 0 {
				return reply{text: before}
			}
			r := after[min(next, len(after)-1)]
			next++
			return r
		case "reload":
			reloaded = true
			return onReload
		}
		return reply{text: "Unknown command\n"}
	}
}

func TestReloadFake(t *testing.T) {
	before := procText(10, 3, 0, 100)
	alert := "[ALERT]    (10) : config : parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section"
	tests := []struct {
		name     string
		handle   func(string) reply
		client   Client
		ctxLimit time.Duration
		// check gets what Reload returned; elapsed is how long it took.
		check func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, elapsed time.Duration)
	}{
		{
			name: "2.6 success after stale answers and a dropped connection",
			handle: scripted(before, reply{},
				reply{text: before}, // the old master still answers
				reply{text: before},
				reply{text: ""}, // connection closed during the re-exec
				reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 3, res.Before.Master.Reloads)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Equal(t, []int{101}, res.After.WorkerPIDs())
				assert.Positive(t, res.Duration)
				assert.Equal(t, 1, f.count("reload"))
				assert.Equal(t, 5, f.count("show proc"))
			},
		},
		{
			name:   "2.6 success counted before the new worker is listed",
			handle: scripted(before, reply{}, reply{text: procText(10, 4, 0, 100)}, reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, []int{101}, res.After.WorkerPIDs())
				assert.Equal(t, 3, f.count("show proc"))
			},
		},
		{
			name:   "2.6 failure",
			handle: scripted(before, reply{}, reply{text: ""}, reply{text: procText(10, 4, 1, 100)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Empty(t, re.Output)
				require.NotNil(t, res)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
			},
		},
		{
			name: "failure seen by polling takes the reason from show startup-logs",
			handle: func() func(string) reply {
				next := scripted(before, reply{text: ""}, reply{text: procText(10, 4, 1, 100)})
				return func(cmd string) reply {
					if cmd == "show startup-logs" {
						return reply{text: alert + "\n[WARNING]  (10) : Loading failure!\n"}
					}
					return next(cmd)
				}
			}(),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Contains(t, re.Output, "unknown keyword 'bogus'")
				assert.Contains(t, err.Error(), "keep serving: parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section")
				assert.Equal(t, 1, f.count("show startup-logs"))
				require.NotNil(t, res)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
			},
		},
		{
			name:   "second failure in a row",
			handle: scripted(procText(10, 4, 1, 100), reply{}, reply{text: procText(10, 5, 2, 100)}),
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 2, re.Failed)
				assert.Contains(t, err.Error(), "2 failed reloads since the last success")
			},
		},
		{
			name:   "success after a failure resets the failed counter",
			handle: scripted(procText(10, 4, 1, 100), reply{}, reply{text: procText(10, 5, 0, 102)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 0, res.After.FailedReloads)
			},
		},
		{
			name: "2.7+ Success=1 on a connection left open",
			handle: scripted(before,
				reply{text: "Success=1\n--\n[NOTICE]   (10) : Loading success.\n", hang: true},
				reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Less(t, elapsed, 3*time.Second)
			},
		},
		{
			name: "2.7+ Success=0 on a connection left open",
			handle: scripted(before,
				reply{text: "Success=0\n--\n" + alert + "\n[WARNING]  (10) : Loading failure!\n", hang: true},
				reply{text: procText(10, 4, 1, 100)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Contains(t, re.Output, "unknown keyword 'bogus'")
				assert.Contains(t, re.Output, "Loading failure!")
				assert.Contains(t, err.Error(), "the previous workers keep serving: parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section")
				assert.NotContains(t, err.Error(), "(10)", "no PID in the message")
				require.NotNil(t, res)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
				assert.Less(t, elapsed, 3*time.Second)
			},
		},
		{
			name:   "Success=0 without a failed column",
			handle: scripted(before, reply{text: "Success=0\n--\nboom\n"}, reply{text: "1 master 4 0d 3.1\n# workers\n100 worker 0 0d 3.1\n"}),
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Equal(t, "boom", re.Output)
			},
		},
		{
			name:   "never seen to finish",
			handle: scripted(before, reply{}),
			client: Client{ReloadTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				require.Error(t, err)
				assert.Nil(t, res)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "reload requested but not seen to finish")
				assert.Contains(t, err.Error(), "reload counter is still 3")
				assert.GreaterOrEqual(t, elapsed, 250*time.Millisecond)
				assert.Less(t, elapsed, 2*time.Second)
			},
		},
		{
			name:     "caller deadline shorter than ReloadTimeout",
			handle:   scripted(before, reply{}),
			ctxLimit: 300 * time.Millisecond,
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, elapsed time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "reload requested but not seen to finish")
				assert.Less(t, elapsed, 2*time.Second)
			},
		},
		{
			name:   "counter advanced but no new worker",
			handle: scripted(before, reply{}, reply{text: procText(10, 4, 0, 100)}),
			client: Client{ReloadTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "no new worker is listed")
			},
		},
		{
			name:   "unexpected answer",
			handle: scripted(before, reply{text: "Permission denied\n"}),
			client: Client{ReloadTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "Permission denied")
			},
		},
		{
			name:   "master restarted",
			handle: scripted(before, reply{}, reply{text: procText(11, 0, 0, 200)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.Error(t, err)
				assert.Nil(t, res)
				assert.Contains(t, err.Error(), "from PID 10 to PID 11")
			},
		},
		{
			name:   "state before unreadable",
			handle: scripted("Unknown command\n", reply{}),
			check: func(t *testing.T, f *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "before reloading")
				assert.Zero(t, f.count("reload"), "no reload may be requested")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, tt.handle)
			c := tt.client
			c.SocketPath = f.path
			c.PollInterval = 5 * time.Millisecond
			if c.ReloadTimeout == 0 {
				c.ReloadTimeout = 5 * time.Second
			}
			ctx := context.Background()
			if tt.ctxLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxLimit)
				defer cancel()
			}
			start := time.Now()
			res, err := c.Reload(ctx)
			tt.check(t, f, res, err, time.Since(start))
			if err != nil && !errors.As(err, new(*ReloadError)) {
				t.Logf("error: %v", err)
			}
		})
	}
}
