package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sync"
	"syscall"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// versionLine matches the first line of `haproxy -v`:
// "HAProxy version 3.0.11-1+deb13u5 2025/11/18 - https://haproxy.org/"
// (older releases say "HA-Proxy version").
var versionLine = regexp.MustCompile(`(?m)^HA-?Proxy version (\S+)`)

// ParseVersion returns the version in the output of `haproxy -v` (or
// -vv), e.g. "3.0.11-1+deb13u5", the same text the master CLI's `show proc`
// and `show version` print.
func ParseVersion(out string) (string, error) {
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		return "", errors.New("no \"HAProxy version\" line in the output of haproxy -v")
	}
	return m[1], nil
}

// Version runs the checker's binary as `haproxy -v` (with the checks'
// environment, CheckerEnvironment; in its own process group; within the
// check timeout) and returns its version: the HAProxy that checks
// configurations.
func (c *Checker) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.haproxyPath, "-v")
	cmd.Env = CheckerEnvironment()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	_ = killGroup(cmd)
	if err != nil {
		return "", fmt.Errorf("%s -v: %w", c.haproxyPath, err)
	}
	return ParseVersion(out.String())
}

// knownVersion is the checker's HAProxy version once a policy check needed
// it (a version_atleast or version_before condition): found with Version
// the first time, kept after it succeeded. Shared by the checkers Allowing
// derives.
type knownVersion struct {
	mu sync.Mutex
	v  string
}

// get returns the version, "" when it is not known yet.
func (k *knownVersion) get() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.v
}

// set records the version.
func (k *knownVersion) set(v string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.v = v
}

// checkPolicy runs the policy with the checker's grant and, when a
// condition needs it, the checker's HAProxy version (found once, with
// Version; if that fails the condition stays denied).
func (c *Checker) checkPolicy(ctx context.Context, b *bundle.Bundle) (policy.Report, error) {
	known := c.version.get()
	report, err := c.evaluate(b, known)
	if err == nil || known != "" || !report.NeedsVersion {
		return report, err
	}
	v, verr := c.Version(ctx)
	if verr != nil {
		return report, err
	}
	c.version.set(v)
	return c.evaluate(b, v)
}

// evaluate is policy.Evaluate with the checker's grant, through its kept
// scans when it has them.
func (c *Checker) evaluate(b *bundle.Bundle, version string) (policy.Report, error) {
	if c.scans == nil {
		return policy.Evaluate(b, c.allowed, version)
	}
	return c.scans.Evaluate(b, c.allowed, version)
}
