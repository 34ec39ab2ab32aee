package image

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// TestChartHAProxyContainerInImage runs the Helm chart's HAProxy container
// as the chart renders it — its command and script, the image's /bin/sh
// and haproxy, the image's user and environment, the configuration and run
// directories the chart mounts — inside the image's root filesystem, and
// drives it as the controller does: publish a configuration, reload it
// through the master socket, and see a refused reload say why while the
// old workers keep serving.
func TestChartHAProxyContainerInImage(t *testing.T) {
	img := requireImage(t)
	root := repoRoot(t)
	helmOut, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		missing(t, fmt.Sprintf("helm (hack/helm.sh: %v)", err))
	}
	helm := strings.TrimSpace(string(helmOut[bytes.LastIndexByte(bytes.TrimSpace(helmOut), '\n')+1:]))

	// Directories inside the image, as the chart's emptyDirs would be.
	const confDir, runDir = "/tmp/htc-sidecar/conf", "/tmp/htc-sidecar/run"
	manifests, err := exec.Command(helm, "template", "htc", filepath.Join(root, "charts", "htc"),
		"--namespace", "htc-system", "--kube-version", "1.34.0",
		"--set", "haproxy.enabled=true", "--set", "haproxy.configDir="+confDir, "--set", "haproxy.runDir="+runDir).Output()
	require.NoError(t, err)
	hap := haproxyContainer(t, manifests)

	uid, gid := imageUser(t, img)
	for _, d := range []string{confDir, runDir} {
		host := filepath.Join(img.root, d)
		require.NoError(t, os.MkdirAll(host, 0o775))
		require.NoError(t, os.Chown(host, 0, int(gid))) // fsGroup
		require.NoError(t, os.Chmod(host, 0o2775))
	}
	cfgFile := filepath.Join(img.root, confDir, "haproxy.cfg")
	socket := filepath.Join(img.root, runDir, "master.sock")
	addr := testutil.FreeAddr(t)
	publish := func(body string, broken bool) {
		cfg := fmt.Sprintf("global\n  maxconn 100\ndefaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n"+
			"frontend fe\n  bind %s\n  http-request return status 200 content-type text/plain string %q\n", addr, body)
		if broken {
			cfg += "  bogus\n"
		}
		require.NoError(t, os.WriteFile(cfgFile+".tmp", []byte(cfg), 0o644))
		require.NoError(t, os.Rename(cfgFile+".tmp", cfgFile))
	}

	argv := append(append([]string{}, hap.Command...), hap.Args...)
	require.NotEmpty(t, argv)
	logs := &testutil.SyncBuffer{}
	cmd := &exec.Cmd{
		Path: argv[0], Args: argv,
		Env: img.config.Config.Env, Dir: img.config.Config.WorkingDir,
		Stdout: logs, Stderr: logs,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     img.root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{gid}},
			Setpgid:    true,
		},
	}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("HAProxy container output:\n%s", logs.String())
		}
	})

	publish("v1", false)
	c := &master.Client{SocketPath: socket}
	ctx := t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.ShowProc(ctx)
		if err == nil && len(st.Workers) > 0 {
			assert.Regexp(t, `^3\.0\.`, st.Master.Version, "the master is the image's HAProxy 3.0")
			break
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("the HAProxy container exited: %v\n%s", err, logs.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "HAProxy's master socket never listed a worker (%v)\n%s", err, logs.String())
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, "v1", get(t, addr))

	publish("v2", false)
	_, err = c.Reload(ctx)
	require.NoError(t, err)
	assert.Equal(t, "v2", get(t, addr))

	publish("v3", true)
	_, err = c.Reload(ctx)
	var refused *master.ReloadError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, err.Error(), "unknown keyword 'bogus' in 'frontend' section")
	assert.Equal(t, "v2", get(t, addr), "the old workers keep serving")
}

func haproxyContainer(t *testing.T, manifests []byte) corev1.Container {
	t.Helper()
	for _, doc := range strings.Split(string(manifests), "\n---") {
		var meta struct{ Kind string }
		if yaml.Unmarshal([]byte(doc), &meta) != nil || meta.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "haproxy" {
				return c
			}
		}
	}
	t.Fatal("no haproxy container in the rendered Deployment")
	return corev1.Container{}
}

// get sends a request on a new connection and returns the body.
func get(t *testing.T, addr string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
