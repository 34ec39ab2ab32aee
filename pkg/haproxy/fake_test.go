package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/phase"
)

// fakeHAProxy writes an executable shell script standing in for haproxy.
func fakeHAProxy(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-haproxy")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o700))
	return path
}

// fakeChecker returns a Checker that runs only policy and the fake.
func fakeChecker(t *testing.T, script string, opts Options) *Checker {
	t.Helper()
	opts.HAProxyPath = fakeHAProxy(t, script)
	opts.SkipSyntax, opts.SkipSchema = true, true
	c, err := NewChecker(opts)
	require.NoError(t, err)
	return c
}

// failsafe bounds a wait for something the code under test reports; it
// only ends a test that would otherwise hang.
const failsafe = 30 * time.Second

func TestTimeoutKillsProcessGroup(t *testing.T) {
	// A run whose shell was killed before it got as far as starting its
	// child (a very busy machine) proves nothing about the child: run again.
	for attempt := 1; ; attempt++ {
		// The child is started first and both PIDs are written at once,
		// after it, into this attempt's own directory.
		pids := filepath.Join(t.TempDir(), "pids")
		script := `sleep 60 &
echo "$$ $!" > ` + pids + `.tmp && mv ` + pids + `.tmp ` + pids + `
wait
`
		c := fakeChecker(t, script, Options{Timeout: 300 * time.Millisecond})
		ws := newTestWorkspace(t)
		start := time.Now()
		_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), testMaps(), nil))
		elapsed := time.Since(start)

		require.Error(t, err)
		var pe *phase.Error
		require.True(t, errors.As(err, &pe))
		assert.Equal(t, phase.Semantic, pe.Phase)
		assert.Equal(t, "haproxy -c timed out after 300ms", pe.Reason)
		assert.True(t, errors.Is(err, context.DeadlineExceeded))
		assert.Less(t, elapsed, 5*time.Second)

		// Check returned: the shell is gone, and with it any chance that
		// it still writes the file.
		data, err := os.ReadFile(pids)
		if errors.Is(err, os.ErrNotExist) && attempt < 10 {
			t.Logf("attempt %d: the script was stopped before it started its child; again", attempt)
			continue
		}
		require.NoError(t, err)
		var leader, child int
		_, err = fmt.Sscan(string(data), &leader, &child)
		require.NoError(t, err)
		assert.Eventually(t, func() bool { return !processAlive(leader) && !processAlive(child) },
			failsafe, 10*time.Millisecond, "leader %d or child %d survived", leader, child)
		return
	}
}

func TestDefaultTimeoutReason(t *testing.T) {
	c := fakeChecker(t, "exit 0\n", Options{})
	assert.Equal(t, "haproxy -c timed out after 10s",
		c.semanticReason(context.Background(), &SemanticError{Err: context.DeadlineExceeded}))
}

func TestParentContextCancel(t *testing.T) {
	c := fakeChecker(t, "sleep 60\n", Options{Timeout: time.Minute})
	ws := newTestWorkspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Check(ctx, bundleFor(ws.Dir(), testConfig(""), testMaps(), nil))
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, phase.Semantic, pe.Phase)
	assert.True(t, errors.Is(err, context.DeadlineExceeded))
	assert.Equal(t, "haproxy -c timed out (request deadline exceeded)", pe.Reason)
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	parent := t.TempDir()
	c := fakeChecker(t, `tr '\0' '\n' < /proc/$$/environ > `+out+"\npwd >> "+out+"\necho \"$@\" >> "+out+"\n", Options{TempDir: parent})
	t.Setenv("HTC_SECRET", "s3cr3t")
	_, err := c.Check(context.Background(), bundleFor("/etc/haproxy", testConfig(""), testMaps(), nil))
	require.NoError(t, err)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "MALLOC_CONF=thp:always,metadata_thp:always"}, lines[:2],
		"the environment is the checker's own, nothing of the controller's")
	ws := lines[2]
	assert.Equal(t, parent, filepath.Dir(ws), "haproxy runs in a fresh workspace under Options.TempDir")
	assert.Equal(t, "-c -L "+LocalPeerName+" -f "+ws+"/haproxy.cfg", lines[3])
	assert.NoDirExists(t, ws, "the workspace is removed after the check")
}

func TestParallelChecksBounded(t *testing.T) {
	state := t.TempDir()
	// Each run counts the runs in progress (its own included), then waits
	// for the test's go-ahead, so the first runs overlap for certain.
	script := `touch ` + state + `/run.$$
ls ` + state + ` | grep -c '^run\.' >> ` + state + `/counts
until [ -e ` + state + `/go ]; do sleep 0.01; done
rm -f ` + state + `/run.$$
`
	const maxParallel = 2
	c := fakeChecker(t, script, Options{MaxParallel: maxParallel})
	running := func() int {
		entries, _ := os.ReadDir(state)
		n := 0
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "run.") {
				n++
			}
		}
		return n
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		ws := newTestWorkspace(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), testMaps(), nil))
			errs <- err
		}()
	}
	// Until the go-ahead no run ends: MaxParallel of them must be waiting.
	assert.Eventually(t, func() bool { return running() >= maxParallel }, failsafe, 5*time.Millisecond,
		"checks did not run in parallel (a global lock?)")
	require.NoError(t, os.WriteFile(filepath.Join(state, "go"), nil, 0o600))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	data, err := os.ReadFile(filepath.Join(state, "counts"))
	require.NoError(t, err)
	peak := 0
	counts := strings.Fields(string(data))
	require.Len(t, counts, 8)
	for _, s := range counts {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		peak = max(peak, n)
	}
	assert.LessOrEqual(t, peak, maxParallel, "more haproxy processes than MaxParallel")
	assert.Equal(t, maxParallel, peak, "checks did not run in parallel (a global lock?)")
}

func TestSlotWaitRespectsContext(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	c := fakeChecker(t, "until [ -e "+release+" ]; do sleep 0.01; done\n", Options{MaxParallel: 1})
	ws1, ws2 := newTestWorkspace(t), newTestWorkspace(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Check(context.Background(), bundleFor(ws1.Dir(), testConfig(""), testMaps(), nil))
	}()
	defer func() { <-done }()
	defer func() { _ = os.WriteFile(release, nil, 0o600) }()
	// Wait until the first run holds the only slot; it keeps it until released.
	require.Eventually(t, func() bool { return len(c.sem) == 1 }, failsafe, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Check(ctx, bundleFor(ws2.Dir(), testConfig(""), testMaps(), nil))
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, phase.Semantic, pe.Phase)
	assert.Equal(t, "haproxy -c timed out waiting for a free checker slot", pe.Reason)
	assert.True(t, errors.Is(err, context.DeadlineExceeded))
}

func TestFakeFailureOutputIsSimplified(t *testing.T) {
	script := `echo "[NOTICE]   (42) : haproxy version is 2.6.12" >&2
echo "[ALERT]    (42) : config : parsing [$PWD/haproxy.cfg:3] : unknown keyword 'x' in 'global' section" >&2
echo "[ALERT]    (42) : config : Fatal errors found in configuration." >&2
exit 1
`
	c := fakeChecker(t, script, Options{})
	ws := newTestWorkspace(t)
	_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), testMaps(), nil))
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "haproxy.cfg:3: unknown keyword 'x' in 'global' section", pe.Reason)
	var se *SemanticError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, 1, se.ExitCode)
	assert.Contains(t, se.Output, "/htc-check-", "raw output (with the workspace path) is kept for operators")
	assert.NotContains(t, pe.Reason, "/htc-check-", "the reason never shows it")
}

func TestCheckRejectsBadBaseDir(t *testing.T) {
	c := fakeChecker(t, "exit 0\n", Options{})
	_, err := c.Check(context.Background(), bundleFor("relative/dir", testConfig(""), nil, nil))
	require.Error(t, err)
	_, ok := phase.Of(err)
	assert.False(t, ok, "a checker misuse is not a configuration failure")
	_, err = c.Check(context.Background(), nil)
	require.Error(t, err)
}

func TestNewCheckerUnknownBinary(t *testing.T) {
	_, err := NewChecker(Options{HAProxyPath: "/nonexistent/haproxy"})
	require.Error(t, err)
}
