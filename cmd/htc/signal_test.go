package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
)

// asHTC makes the test binary run htc's main instead of the tests, so that
// the signal tests can start htc as a process of its own.
const asHTC = "HTC_TEST_RUN_AS_HTC"

// TestMain runs htc's main when asked to (see asHTC), else the tests, with
// htc check's test-report cache kept out of the user's cache directory.
func TestMain(m *testing.M) {
	if os.Getenv(asHTC) == "1" {
		main()
		return
	}
	dir, err := os.MkdirTemp("", "htc-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HTC_TEST_CACHE", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// htcProcess is htc started as a process in a process group of its own.
type htcProcess struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	errOut *testutil.SyncBuffer
	lines  chan string // stderr, line by line
	exited chan struct{}
	code   int
}

func startHTC(t *testing.T, env []string, args ...string) *htcProcess {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	p := &htcProcess{cmd: exec.Command(self, args...), errOut: &testutil.SyncBuffer{}, lines: make(chan string, 100), exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), asHTC+"=1"), env...)
	p.cmd.Stdout = &p.stdout
	pr, pw := io.Pipe()
	p.cmd.Stderr = pw
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			fmt.Fprintln(p.errOut, s.Text())
			select {
			case p.lines <- s.Text():
			default:
			}
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		_ = pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	return p
}

// waitForLine waits until htc writes a line containing want to stderr; it
// fails when htc exits first.
func (p *htcProcess) waitForLine(t *testing.T, want string) {
	t.Helper()
	for {
		select {
		case line := <-p.lines:
			if strings.Contains(line, want) {
				return
			}
		case <-p.exited:
			t.Fatalf("htc exited (code %d) before writing %q: %s", p.code, want, p.errOut.String())
		}
	}
}

// fakeHAProxy writes a haproxy that reports its PID and its child's on the
// FIFO report, then waits for the child, which sleeps for ten minutes: a
// check that only a signal ends.
func fakeHAProxy(t *testing.T) (bin, report string) {
	t.Helper()
	dir := t.TempDir()
	report = filepath.Join(dir, "pids")
	require.NoError(t, syscall.Mkfifo(report, 0o600))
	bin = filepath.Join(dir, "haproxy")
	script := "#!/bin/sh\nsleep 600 &\necho \"$$ $!\" > " + report + "\nwait\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o700))
	return bin, report
}

// readReport reads one line from the FIFO path, unless htc exits first.
func (p *htcProcess) readReport(t *testing.T, path string) []int {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path) // blocks until the fake haproxy opens it
		if err != nil {
			got <- ""
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		var pids []int
		for _, f := range strings.Fields(line) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
		require.Len(t, pids, 2, "the fake haproxy's report: %q", line)
		return pids
	case <-p.exited:
		t.Fatalf("htc exited (code %d) before running haproxy: %s", p.code, p.errOut.String())
		return nil
	}
}

// alive lists the processes that are not dead (zombies included as dead)
// among pids and in the process groups groups, from /proc.
func alive(t *testing.T, pids []int, groups []int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces; cut at the last ')'.
		fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(fields[2])
		for _, want := range pids {
			if pid == want {
				out = append(out, fmt.Sprintf("pid %d (%s)", pid, fields[0]))
			}
		}
		for _, g := range groups {
			if pgrp == g && !containsInt(pids, pid) {
				out = append(out, fmt.Sprintf("pid %d in group %d (%s)", pid, g, fields[0]))
			}
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestSignalsStopCommands starts each one-shot command on work that only a
// signal ends (a haproxy -c that never returns, a template that never ends),
// signals it once it reported that work, and requires a prompt clean exit:
// code 130, one line on stderr naming the signal, no result on stdout, and
// no process left of htc's process group or of haproxy's.
func TestSignalsStopCommands(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		args   []string
		render bool // waits on a state FIFO instead of a fake haproxy
	}{
		{name: "check SIGTERM", sig: syscall.SIGTERM, args: []string{"check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress}},
		{name: "check SIGINT", sig: syscall.SIGINT, args: []string{"check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress}},
		{name: "validate SIGTERM", sig: syscall.SIGTERM, args: []string{"validate", "-f", exampleConfig, "--workers", "1", "--test", "basic-routing"}},
		{name: "render SIGTERM", sig: syscall.SIGTERM, render: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *htcProcess
			var pids []int
			if tc.render {
				p = startRender(t)
			} else {
				bin, report := fakeHAProxy(t)
				p = startHTC(t, []string{"HTC_HAPROXY=" + bin}, tc.args...)
				pids = p.readReport(t, report)
			}
			require.NoError(t, syscall.Kill(p.cmd.Process.Pid, tc.sig))
			<-p.exited
			assert.Equal(t, exitInterrupted, p.code)
			stderr := strings.TrimRight(p.errOut.String(), "\n")
			assert.NotContains(t, stderr, "\n", "one line on stderr")
			assert.Regexp(t, `^htc \w+: stopped before finishing: (terminated|interrupt) signal received$`, stderr)
			assert.Empty(t, p.stdout.String(), "no verdict or report of interrupted work")
			groups := []int{p.cmd.Process.Pid}
			if len(pids) > 0 {
				groups = append(groups, pids[0]) // haproxy leads a group of its own
			}
			assert.Empty(t, alive(t, pids, groups), "processes left behind")
		})
	}
}

// startRender starts htc render of a config whose template never ends,
// over a state read from a FIFO, and returns once htc has read the state:
// its signal handling is installed before it reads anything.
func startRender(t *testing.T) *htcProcess {
	t.Helper()
	cfg := writeFile(t, "config.yaml", `apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: htc, namespace: htc-system}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
  haproxyConfig:
    template: "{{ range .resources.services.List }}{{ range 1000000000000 }}{{ end }}{{ end }}"
`)
	state := filepath.Join(t.TempDir(), "state.yaml")
	require.NoError(t, syscall.Mkfifo(state, 0o600))
	p := startHTC(t, nil, "render", "-f", cfg, "--state", state)
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(state, os.O_WRONLY, 0) // blocks until htc opens it
		if err == nil {
			_, err = f.WriteString("{apiVersion: v1, kind: Service, metadata: {name: a, namespace: default}}\n")
			err = errors.Join(err, f.Close())
		}
		wrote <- err
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-p.exited:
		t.Fatalf("htc exited (code %d) before reading its state: %s", p.code, p.errOut.String())
	}
	return p
}

// TestSignalStopsController starts the controller against an API server
// that is not there, waits until it reports that it waits for its config,
// and sends SIGTERM: it shuts down cleanly (exit 0) and leaves no process.
func TestSignalStopsController(t *testing.T) {
	cert := testutil.SelfSigned(t, "localhost", time.Now().Add(24*time.Hour))
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+testutil.FreeAddr(t)+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	p := startHTC(t, nil, "controller", "--kubeconfig", kubeconfig, "--config-namespace", "ns", "--config-name", "n",
		"--webhook-cert-file", writeFile(t, "tls.crt", string(cert.CertPEM)), "--webhook-key-file", writeFile(t, "tls.key", string(cert.KeyPEM)),
		"--webhook-bind-address", "127.0.0.1", "--webhook-port", portOf(t, testutil.FreeAddr(t)),
		"--metrics-addr", testutil.FreeAddr(t), "--health-addr", testutil.FreeAddr(t))
	p.waitForLine(t, "waiting for the HAProxyTemplateConfig")
	require.NoError(t, syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM))
	<-p.exited
	assert.Equal(t, exitOK, p.code, p.errOut.String())
	assert.Contains(t, p.errOut.String(), "controller shutting down")
	assert.Empty(t, alive(t, nil, []int{p.cmd.Process.Pid}), "processes left behind")
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	require.Positive(t, i)
	return addr[i+1:]
}
