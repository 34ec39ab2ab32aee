package master

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
)

// failsafe bounds a wait for what HAProxy reports; it only ends a test that
// would otherwise hang (a busy machine under -race is slow, never wrong).
const failsafe = 30 * time.Second

// haproxyBinary finds haproxy in PATH. Without it the test is skipped,
// except under CI=true where it fails.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("haproxy is required under CI=true: %v", err)
		}
		t.Skipf("haproxy not found, skipping the integration test: %v", err)
	}
	return bin
}

// haproxyConfig returns a configuration answering every request on addr with
// body; broken adds an unknown keyword.
func haproxyConfig(addr, body string, broken bool) string {
	cfg := fmt.Sprintf(`global
    maxconn 100

defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
    timeout http-request 10s

frontend fe
    bind %s
    http-request return status 200 content-type text/plain string "%s\n"
`, addr, body)
	if broken {
		cfg += "    bogus\n"
	}
	return cfg
}

// haproxyProc is a real HAProxy in master-worker mode.
type haproxyProc struct {
	sock, cfg, addr string
	out             *testutil.SyncBuffer
}

// startHAProxy runs `haproxy -W -S <sock> -f <cfg>` in its own process group,
// killed (and waited for) when the test ends, and waits until its master
// CLI answers. opts may adjust the command before it starts.
func startHAProxy(t *testing.T, bin string, opts ...func(*exec.Cmd)) *haproxyProc {
	t.Helper()
	dir := t.TempDir()
	if len(filepath.Join(dir, "master.sock")) >= 100 {
		dir = shortTempDir(t)
	}
	h := &haproxyProc{
		sock: filepath.Join(dir, "master.sock"),
		cfg:  filepath.Join(dir, "haproxy.cfg"),
		addr: testutil.FreeAddr(t),
		out:  &testutil.SyncBuffer{},
	}
	h.writeConfig(t, "v1", false)

	cmd := exec.Command(bin, "-W", "-S", h.sock, "-f", h.cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = h.out, h.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	for _, o := range opts {
		o(cmd)
	}
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-waited
		}
		// The master waits for its workers, but make sure none is left.
		if err := syscall.Kill(-pgid, 0); err == nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Errorf("haproxy processes of group %d outlived the master", pgid)
		}
		if t.Failed() {
			t.Logf("haproxy output:\n%s", h.out.String())
		}
	})

	c := h.client()
	deadline := time.Now().Add(failsafe)
	for {
		st, err := c.ShowProc(context.Background())
		if err == nil && len(st.Workers) > 0 {
			break
		}
		select {
		case err := <-waited:
			waited <- err
			t.Fatalf("haproxy exited: %v\n%s", err, h.out.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "master CLI not ready: %v\n%s", err, h.out.String())
		time.Sleep(20 * time.Millisecond)
	}
	return h
}

func (h *haproxyProc) client() *Client {
	return &Client{SocketPath: h.sock, CommandTimeout: 5 * time.Second, ReloadTimeout: 15 * time.Second}
}

func (h *haproxyProc) writeConfig(t *testing.T, body string, broken bool) {
	t.Helper()
	require.NoError(t, os.WriteFile(h.cfg, []byte(haproxyConfig(h.addr, body, broken)), 0o600))
}

// get returns the trimmed body HAProxy answers on a new connection.
func (h *haproxyProc) get(t *testing.T) string {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + h.addr + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return strings.TrimSpace(string(body))
}

// getEventually is get until it returns want (for at most the failsafe) and
// reports how many attempts it took. Right after a reload the previous worker
// may still accept a connection before it handles its stop signal.
func (h *haproxyProc) getEventually(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for attempt := 1; ; attempt++ {
		got := h.get(t)
		if got == want {
			if attempt > 1 {
				t.Logf("got %q only at attempt %d", want, attempt)
			}
			return
		}
		require.True(t, time.Now().Before(deadline), "still answered %q after %d attempts, want %q", got, attempt, want)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIntegrationReload(t *testing.T) {
	bin := haproxyBinary(t)
	h := startHAProxy(t, bin)
	c := h.client()
	ctx := context.Background()
	require.Equal(t, "v1", h.get(t))

	ok := t.Run("reload v2", func(t *testing.T) {
		before, err := c.ShowProc(ctx)
		require.NoError(t, err)
		require.Len(t, before.Workers, 1)
		oldWorker := before.Workers[0].PID

		// Hold a connection with an incomplete request so that the
		// current worker has to stay around as an old worker.
		held, err := net.Dial("tcp", h.addr)
		require.NoError(t, err)
		defer held.Close()
		_, err = io.WriteString(held, "GET / HTTP/1.1\r\n")
		require.NoError(t, err)
		// `@1 show fd` (routed by the master to the current worker) lists
		// the accepted connection with its client port.
		rport := fmt.Sprintf("rport=%d ", held.LocalAddr().(*net.TCPAddr).Port)
		require.Eventually(t, func() bool {
			out, err := c.Command(ctx, "@1 show fd")
			return err == nil && strings.Contains(out, rport)
		}, failsafe, 20*time.Millisecond, "the worker did not accept the held connection")

		h.writeConfig(t, "v2", false)
		res, err := c.Reload(ctx)
		require.NoError(t, err)
		t.Logf("reload took %s", res.Duration)
		assert.Equal(t, before.Master.PID, res.After.Master.PID, "the master keeps its PID across the re-exec")
		assert.Equal(t, res.Before.Master.Reloads+1, res.After.Master.Reloads)
		assert.Zero(t, res.After.FailedReloads)
		require.Len(t, res.After.Workers, 1)
		assert.NotContains(t, res.Before.WorkerPIDs(), res.After.Workers[0].PID, "a new worker")
		assert.True(t, slices.ContainsFunc(res.After.OldWorkers, func(p Process) bool { return p.PID == oldWorker }),
			"the previous worker %d is listed as old worker: %+v", oldWorker, res.After.OldWorkers)

		h.getEventually(t, "v2")
	})
	if !ok {
		return
	}

	ok = t.Run("broken config keeps v2", func(t *testing.T) {
		h.writeConfig(t, "v2", true)
		res, err := c.Reload(ctx)
		var re *ReloadError
		require.ErrorAs(t, err, &re, "got %v", err)
		t.Logf("error: %v", err)
		assert.Equal(t, 1, re.Failed)
		require.NotNil(t, res)
		assert.Equal(t, res.Before.Master.Reloads+1, res.After.Master.Reloads)
		assert.Equal(t, 1, res.After.FailedReloads)
		assert.Equal(t, res.Before.WorkerPIDs(), res.After.WorkerPIDs(), "the previous worker keeps serving")

		assert.Equal(t, "v2", h.get(t))
		assert.Eventually(t, func() bool {
			return strings.Contains(h.out.String(), "unknown keyword 'bogus'")
		}, failsafe, 20*time.Millisecond, "haproxy logs why it refused the configuration")
		// HAProxy 3.0 also says why to the caller: the reload's answer
		// carries the startup logs, and `show startup-logs` keeps them.
		assert.Contains(t, re.Output, "unknown keyword 'bogus' in 'frontend' section")
		assert.Regexp(t, `keep serving: parsing \[[^]]*haproxy\.cfg:\d+\] : unknown keyword 'bogus' in 'frontend' section$`, err.Error())
		logs, err := c.Command(ctx, "show startup-logs")
		require.NoError(t, err)
		assert.Contains(t, logs, "unknown keyword 'bogus' in 'frontend' section")
		assert.Contains(t, logs, "Loading failure!")

		// A second failure in a row is counted as such.
		res, err = c.Reload(ctx)
		require.ErrorAs(t, err, &re, "got %v", err)
		assert.Equal(t, 2, re.Failed)
		assert.Equal(t, res.Before.WorkerPIDs(), res.After.WorkerPIDs())
		assert.Equal(t, "v2", h.get(t))
	})
	if !ok {
		return
	}

	t.Run("fixed config v3", func(t *testing.T) {
		h.writeConfig(t, "v3", false)
		res, err := c.Reload(ctx)
		require.NoError(t, err)
		assert.Equal(t, res.Before.Master.Reloads+1, res.After.Master.Reloads)
		assert.Equal(t, 2, res.Before.FailedReloads)
		assert.Zero(t, res.After.FailedReloads, "a success resets the failed counter")
		require.Len(t, res.After.Workers, 1)
		assert.NotContains(t, res.Before.WorkerPIDs(), res.After.Workers[0].PID)

		h.getEventually(t, "v3")
	})
}

// TestIntegrationCommandAfterReload checks that Command still returns at once
// after a re-exec, when HAProxy 2.6 no longer closes the connection by itself:
// a Command that waited for the master to close would end in its
// CommandTimeout, an error.
func TestIntegrationCommandAfterReload(t *testing.T) {
	bin := haproxyBinary(t)
	h := startHAProxy(t, bin)
	c := h.client()
	c.CommandTimeout = 3 * time.Second
	ctx := context.Background()

	_, err := c.Reload(ctx)
	require.NoError(t, err)
	for range 3 {
		out, err := c.Command(ctx, "show proc")
		require.NoError(t, err, "the answer ends with the connection, not with the timeout")
		assert.Contains(t, out, "# workers")
	}

	out, err := c.Command(ctx, "no such command")
	require.NoError(t, err)
	assert.Contains(t, out, "Unknown command")
}

// TestIntegrationReloadKeepsTheBinary: the master re-executes its argv[0]
// after starting and on every reload. Started as plain "haproxy" with a PATH
// that does not lead to the binary under test (a scrubbed environment, or a
// different haproxy in /usr/sbin such as the host's Debian package), the
// master must still be the same HAProxy afterwards. make test's haproxy (the
// image's, run through a loader wrapper) passes --argv0 for this; a patched
// copy of the binary started this way was measured to turn into the host's
// HAProxy 2.6.
func TestIntegrationReloadKeepsTheBinary(t *testing.T) {
	bin := haproxyBinary(t)
	out, err := exec.Command(bin, "-v").Output()
	require.NoError(t, err)
	fields := strings.Fields(string(out))
	require.GreaterOrEqual(t, len(fields), 3, "haproxy -v: %q", out)
	version := fields[2] // "HAProxy version 3.0.11-1+deb13u5 ..."

	h := startHAProxy(t, bin, func(cmd *exec.Cmd) {
		cmd.Args[0] = "haproxy"
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	})
	c := h.client()
	ctx := context.Background()
	st, err := c.ShowProc(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, st.Master.Version, "after starting, the master runs %s", bin)
	v, err := c.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, v, "show version names the binary haproxy -v describes")

	h.writeConfig(t, "v2", false)
	res, err := c.Reload(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, res.After.Master.Version, "after a reload, the master runs %s", bin)
	require.Len(t, res.After.Workers, 1)
	assert.Equal(t, version, res.After.Workers[0].Version)
	h.getEventually(t, "v2")
}
