package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// sigtermTrials is how often TestChartHAProxyContainerStopsOnSIGTERMDuringReloads
// stops the container: HAProxy exec'd as PID 1 lost about 2 SIGTERMs in 5.
const sigtermTrials = 20

// TestChartHAProxyContainerStopsOnSIGTERMDuringReloads runs the chart's
// HAProxy container as a container runtime does — its command as PID 1 of
// a PID namespace of its own, in the image's root filesystem, as the
// image's user — reloads it back to back through the master socket, as the
// controller does under a stream of changes, and sends PID 1 the SIGTERM
// the kubelet sends: the container must exit by itself, every time. With
// haproxy exec'd as PID 1, a SIGTERM that came while the master
// re-executed itself for a reload was lost (PID 1 has no default signal
// actions), and the pod waited out its grace period to be killed.
func TestChartHAProxyContainerStopsOnSIGTERMDuringReloads(t *testing.T) {
	img := requireImage(t)
	root := repoRoot(t)
	helmOut, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		missing(t, fmt.Sprintf("helm (hack/helm.sh: %v)", err))
	}
	helm := strings.TrimSpace(string(helmOut[bytes.LastIndexByte(bytes.TrimSpace(helmOut), '\n')+1:]))
	const confDir, runDir = "/tmp/htc-sigterm/conf", "/tmp/htc-sigterm/run"
	manifests, err := exec.Command(helm, "template", "htc", filepath.Join(root, "charts", "htc"),
		"--namespace", "htc-system", "--kube-version", "1.34.0",
		"--set", "haproxy.enabled=true", "--set", "haproxy.configDir="+confDir, "--set", "haproxy.runDir="+runDir).Output()
	require.NoError(t, err)
	hap := haproxyContainer(t, manifests)
	argv := append(append([]string{}, hap.Command...), hap.Args...)
	require.NotEmpty(t, argv)

	uid, gid := imageUser(t, img)
	for _, d := range []string{confDir, runDir} {
		host := filepath.Join(img.root, d)
		require.NoError(t, os.MkdirAll(host, 0o775))
		require.NoError(t, os.Chown(host, 0, int(gid))) // fsGroup
		require.NoError(t, os.Chmod(host, 0o2775))
	}
	addr := testutil.FreeAddr(t)
	cfg := fmt.Sprintf("global\n  maxconn 100\ndefaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n"+
		"frontend fe\n  bind %s\n  http-request return status 200 content-type text/plain string ok\n", addr)
	require.NoError(t, os.WriteFile(filepath.Join(img.root, confDir, "haproxy.cfg"), []byte(cfg), 0o644))
	socket := filepath.Join(img.root, runDir, "master.sock")

	for trial := 1; trial <= sigtermTrials; trial++ {
		_ = os.Remove(socket)
		logs := &testutil.SyncBuffer{}
		cmd := &exec.Cmd{
			Path: argv[0], Args: argv,
			Env: img.config.Config.Env, Dir: img.config.Config.WorkingDir,
			Stdout: logs, Stderr: logs,
			SysProcAttr: &syscall.SysProcAttr{
				Chroot:     img.root,
				Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{gid}},
				Cloneflags: syscall.CLONE_NEWPID, // the command is PID 1, as in a container
			},
		}
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stopped := stopDuringReloads(t, &master.Client{SocketPath: socket, ReloadTimeout: 5 * time.Second}, cmd.Process.Pid, exited, logs)
		t.Logf("trial %d: stopped=%v", trial, stopped)
		if !stopped {
			// SIGKILL to a PID namespace's init ends the whole namespace.
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("trial %d of %d: the HAProxy container ignored SIGTERM during reloads: still running 20 s later "+
				"(the kubelet would SIGKILL it after the grace period)\n%s", trial, sigtermTrials, logs.String())
		}
	}
}

// stopDuringReloads waits until the container's HAProxy serves, reloads it
// back to back, sends pid SIGTERM once two reloads went through, and
// reports whether the container exited within 20 s (reloads going on, as
// the controller's do while it drains).
func stopDuringReloads(t *testing.T, c *master.Client, pid int, exited <-chan struct{}, logs *testutil.SyncBuffer) bool {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.ShowProc(ctx)
		if err == nil && len(st.Workers) > 0 {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the HAProxy container exited before serving\n%s", logs.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "HAProxy's master socket never listed a worker (%v)\n%s", err, logs.String())
		time.Sleep(20 * time.Millisecond)
	}
	var reloads atomic.Int64
	rctx, stop := context.WithCancel(ctx)
	reloaderDone := make(chan struct{})
	go func() {
		defer close(reloaderDone)
		for rctx.Err() == nil {
			if _, err := c.Reload(rctx); err == nil {
				reloads.Add(1)
			} else {
				time.Sleep(10 * time.Millisecond) // the master is stopping or gone
			}
		}
	}()
	defer func() { stop(); <-reloaderDone }()
	deadline = time.Now().Add(30 * time.Second)
	for reloads.Load() < 2 {
		require.True(t, time.Now().Before(deadline), "no two reloads within 30 s\n%s", logs.String())
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	select {
	case <-exited:
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}
