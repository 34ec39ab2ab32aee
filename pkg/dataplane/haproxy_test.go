package dataplane

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// failsafe bounds a wait for what HAProxy reports; it only ends a test
// that would otherwise hang.
const failsafe = 30 * time.Second

// haproxy30 is testutil.HAProxy30.
func haproxy30(t testing.TB) string { return testutil.HAProxy30(t) }

// instance is a real HAProxy in master-worker mode reading a bundle from
// its directory.
type instance struct {
	dir     string // the bundle's BaseDir
	http    string // the plain frontend's address
	tls     string // the TLS frontend's address
	master  *master.Client
	session *master.WorkerSession
	logs    *testutil.SyncBuffer
}

// shortDir is a new directory short enough for a unix socket path.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "htcdp")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// newInstance prepares an instance (its directory and addresses); start
// runs HAProxy on the first bundle.
func newInstance(t testing.TB) *instance {
	t.Helper()
	dir := shortDir(t)
	return &instance{dir: dir, http: testutil.FreeAddr(t), tls: testutil.FreeAddr(t), logs: &testutil.SyncBuffer{},
		master: &master.Client{SocketPath: filepath.Join(dir, "m.sock"), ReloadTimeout: failsafe}}
}

// start writes b and runs `haproxy -W -S <sock> -f haproxy.cfg` in its own
// process group, killed when the test ends, and waits until its worker
// answers.
func (h *instance) start(t testing.TB, bin string, b *bundle.Bundle) {
	t.Helper()
	require.NoError(t, bundle.Write(h.dir, b))
	cmd := exec.Command(bin, "-W", "-S", h.master.SocketPath, "-f", filepath.Join(h.dir, bundle.ConfigFileName))
	cmd.Dir = h.dir
	cmd.Stdout, cmd.Stderr = h.logs, h.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if h.session != nil {
			_ = h.session.Close()
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy (%s):\n%s", h.dir, h.logs.String())
		}
	})
	deadline := time.Now().Add(failsafe)
	for {
		st, err := h.master.ShowProc(t.Context())
		if err == nil && len(st.Workers) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "haproxy did not start: %v\n%s", err, h.logs.String())
		time.Sleep(20 * time.Millisecond)
	}
	h.open(t)
}

// open (re)opens the session with the current worker.
func (h *instance) open(t testing.TB) {
	t.Helper()
	if h.session != nil {
		_ = h.session.Close()
	}
	s, err := h.master.OpenWorker(t.Context())
	require.NoError(t, err)
	h.session = s
}

// reload writes b and reloads, then waits until no old worker is left
// (one could still answer a request with the previous configuration).
func (h *instance) reload(t *testing.T, b *bundle.Bundle) {
	t.Helper()
	require.NoError(t, bundle.Write(h.dir, b))
	_, err := h.master.Reload(t.Context())
	require.NoError(t, err, "reload")
	deadline := time.Now().Add(failsafe)
	for {
		st, err := h.master.ShowProc(t.Context())
		require.NoError(t, err)
		if len(st.OldWorkers) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "old workers still running: %+v", st.OldWorkers)
		time.Sleep(10 * time.Millisecond)
	}
	h.open(t)
}

// get sends GET / with Host host on a new connection and returns the
// status and body ("" and the error's text when it failed).
func (h *instance) get(t *testing.T, host string) (int, string) {
	t.Helper()
	return h.getPath(t, host, "/")
}

// getPath is get for another path.
func (h *instance) getPath(t *testing.T, host, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.http+path, nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// servedCert returns the SHA-1 fingerprint of the certificate the TLS
// frontend presents.
func (h *instance) servedCert(t *testing.T) string {
	t.Helper()
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the test compares the certificate itself
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", h.tls)
	require.NoError(t, err)
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	require.NotEmpty(t, certs)
	sum := sha1.Sum(certs[0].Raw)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// echo is a backend on loopback answering every request with its address.
type echo struct{ ip, addr string }

// startEchoes starts n HTTP servers on 127.0.0.1 and 127.0.0.2, each
// answering with its own address.
func startEchoes(t *testing.T, n int) []echo {
	t.Helper()
	var out []echo
	for i := range n {
		ip := "127.0.0.1"
		if i%2 == 1 {
			ip = "127.0.0.2"
		}
		ln, err := net.Listen("tcp", ip+":0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, addr)
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		out = append(out, echo{ip: ip, addr: addr})
	}
	return out
}
