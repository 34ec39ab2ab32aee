package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// The environment of `haproxy -c`, complete: no variable of the
// controller's own environment reaches it (see CheckerEnvironment).
const (
	// checkerPath is where haproxy finds the programs it names.
	checkerPath = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
	// checkerMallocConf has jemalloc (which the Debian and htc image
	// builds of HAProxy use) back its heap with transparent huge pages
	// where the kernel allows them on request (THP "madvise" or "always").
	// `haproxy -c` of a large configuration spends a fifth of its time in
	// page faults, zeroing the 190 MB it allocates four kilobytes at a
	// time; huge pages cut a check of 10,000 backends from 274 to 188 ms
	// (p50 of 25 interleaved runs). It changes no verdict: only how the
	// allocator asks the kernel for memory. An HAProxy built with another
	// allocator ignores it; an older jemalloc that does not know an option
	// prints a line without HAProxy's level prefix, which the checker's
	// output reading skips.
	checkerMallocConf = "MALLOC_CONF=thp:always,metadata_thp:always"
)

// CheckerEnvironment returns the complete environment every `haproxy`
// the checker runs gets (`haproxy -c` and `haproxy -v`): a PATH and the
// allocator's tuning, nothing of the controller's own environment. It
// returns a new slice on every call.
func CheckerEnvironment() []string {
	return []string{checkerPath, checkerMallocConf}
}

// LocalPeerName is the local peer name `haproxy -c` runs with (-L). Without
// it HAProxy takes the machine's host name, and repeats it in messages
// ("no peer named '<host>'") and in HAPROXY_LOCALPEER: the host name must
// not reach a reason.
const LocalPeerName = "htc-check"

// maxOutput caps how much haproxy output is kept.
const maxOutput = 1 << 20

// waitDelay is how long Wait waits for output pipes after the process group
// was killed.
const waitDelay = 2 * time.Second

// slotWaitError is the cause when the context ended before a checker slot
// became free.
type slotWaitError struct{ err error }

// Error says the run never started.
func (e *slotWaitError) Error() string { return "waiting for a checker slot: " + e.err.Error() }

// Unwrap returns the context error.
func (e *slotWaitError) Unwrap() error { return e.err }

// cappedBuffer keeps the first maxOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

// Write keeps what fits and reports everything as written.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// runHAProxy runs `haproxy -c -f <dir>/haproxy.cfg` in dir, bounded by the
// semaphore and the timeout. It returns the simplified warnings of a valid
// configuration and the raw output, a *SemanticError for an invalid
// configuration or an aborted run, or another error when haproxy could not
// be started.
func (c *Checker) runHAProxy(ctx context.Context, dir string) ([]string, string, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, "", &SemanticError{ExitCode: -1, Err: &slotWaitError{err: ctx.Err()}}
	}
	defer func() { <-c.sem }()

	runCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, c.haproxyPath, "-c", "-L", LocalPeerName, "-f", filepath.Join(dir, bundle.ConfigFileName))
	cmd.Dir = dir
	cmd.Env = CheckerEnvironment()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
	var out cappedBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out

	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", c.haproxyPath, err)
	}
	waitErr := cmd.Wait()
	// Whatever haproxy left behind in its process group goes with it.
	_ = killGroup(cmd)

	raw := out.String()
	if ctxErr := runCtx.Err(); ctxErr != nil {
		return nil, raw, &SemanticError{ExitCode: -1, Output: raw, Err: ctxErr}
	}
	errs, warnings := SimplifyOutput(raw, dir)
	if waitErr == nil {
		return warnings, raw, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return nil, raw, fmt.Errorf("run %s: %w", c.haproxyPath, waitErr)
	}
	code := exitErr.ExitCode()
	if len(errs) == 0 {
		errs = []string{fallbackMessage(raw, code)}
	}
	return nil, raw, &SemanticError{Messages: errs, ExitCode: code, Output: raw}
}

// killGroup sends SIGKILL to the process group haproxy leads.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// fallbackMessage describes a failed run whose output had no error line.
func fallbackMessage(raw string, code int) string {
	if strings.Contains(raw, "no listener") {
		return "configuration has no listener (no frontend binds an address)"
	}
	if code < 0 {
		return "haproxy -c was killed"
	}
	return fmt.Sprintf("haproxy -c failed with exit code %d", code)
}
