package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// offlineBound bounds one `htc check` run. It is a hang guard, not a timing
// assertion: htc check's own budget is the proposal deadline (30 s) plus the
// embedded tests' (60 s).
const offlineBound = 2 * time.Minute

// checkResult is one `htc check` run.
type checkResult struct {
	exit           int
	stdout, stderr string
	review         *admissionv1.AdmissionReview
	err            error
}

// htcCheck runs `htc check` on config and the state with the given object
// files, with the planted environment and a private TMPDIR.
func htcCheck(name, config string, objectFile, oldFile, op string, extraState ...string) checkResult {
	tmp := filepath.Join(env.tmp, "offline-"+name)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return checkResult{err: err}
	}
	defer os.RemoveAll(tmp)
	args := []string{"check", "-f", config, "--state", env.state}
	for _, s := range extraState {
		args = append(args, "--state", s)
	}
	args = append(args, "--object", objectFile, "-o", "json")
	if oldFile != "" {
		args = append(args, "--old", oldFile)
	}
	if op != "" {
		args = append(args, "--operation", op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), offlineBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.htc, args...)
	cmd.Env = htcEnv(tmp)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := checkResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("htc check did not return within %s (hang guard)", offlineBound)
		return r
	case errors.As(err, &exitErr):
		r.exit = exitErr.ExitCode()
	case err != nil:
		r.err = err
		return r
	}
	if r.exit == 0 || r.exit == 1 {
		r.review = &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(stdout.Bytes(), r.review); err != nil || r.review.Response == nil {
			r.err = fmt.Errorf("htc check -o json printed no AdmissionReview response (%v):\n%s", err, shorten(r.stdout))
		}
	}
	return r
}

// writeJSON writes obj as JSON into dir/name and returns the path.
func writeJSON(dir, name string, obj map[string]any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, b, 0o644)
}

// probeOfflineConfigs finds out whether `htc check --object` judges a
// proposed HAProxyTemplateConfig, by proposing the example config itself.
func probeOfflineConfigs() error {
	obj := baseConfigObject("example")
	f, err := writeJSON(filepath.Join(env.root, "probe"), "config.json", obj)
	if err != nil {
		return err
	}
	r := htcCheck("probe", env.configs["example"], f, env.configs["example"], "UPDATE")
	switch {
	case r.err != nil:
		return r.err
	case r.exit == 2:
		env.offlineWhy = strings.TrimSpace(r.stderr)
	case r.exit == 0:
		env.offlineConfigs = true
	default:
		return fmt.Errorf("htc check denied the unchanged example config as a proposal: %s", shorten(r.stdout+r.stderr))
	}
	return nil
}

// TestOffline runs every case through `htc check`; classes run in
// parallel, the cases of a class one after the other.
func TestOffline(t *testing.T) {
	for _, cs := range casesByClass() {
		if len(cs) == 0 {
			continue
		}
		t.Run(cs[0].Class, func(t *testing.T) {
			t.Parallel()
			for _, c := range cs {
				t.Run(c.ID, func(t *testing.T) { runOffline(t, c) })
			}
		})
	}
}

func runOffline(t *testing.T, c *Case) {
	if !c.runs("offline") {
		t.Skipf("%s runs over HTTPS only", c.ID)
	}
	if c.kind() == "config" && !env.offlineConfigs {
		t.Skipf("PENDING: htc check does not judge a proposed HAProxyTemplateConfig yet (it said: %s); this case runs over HTTPS", env.offlineWhy)
	}
	dir := filepath.Join(env.root, "offline", c.ID)
	objFile, err := writeJSON(dir, "object.json", c.object)
	if err != nil {
		t.Fatal(err)
	}
	oldFile := ""
	if c.old != nil {
		if oldFile, err = writeJSON(dir, "old.json", c.old); err != nil {
			t.Fatal(err)
		}
	}
	if c.op == "DELETE" && c.old != nil {
		objFile = oldFile
	}
	var extra []string
	for i, obj := range c.State {
		f, err := writeJSON(dir, fmt.Sprintf("state-%d.json", i), obj)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, f)
	}
	r := htcCheck(c.ID, env.configs[c.Config], objFile, oldFile, c.op, extra...)
	var problems []string
	v := verdict{}
	switch {
	case r.err != nil:
		problems = append(problems, r.err.Error())
	case r.exit == 2:
		problems = append(problems, "htc check refused its input (exit 2): "+shorten(r.stderr))
	default:
		resp := r.review.Response
		v = verdict{answered: true, allowed: resp.Allowed, warnings: resp.Warnings}
		if resp.Result != nil {
			v.reason = resp.Result.Message
		}
		if (r.exit == 0) != resp.Allowed {
			problems = append(problems, fmt.Sprintf("exit code %d disagrees with allowed=%v", r.exit, resp.Allowed))
		}
	}
	problems = append(problems, verdictProblems(c, v)...)
	problems = append(problems, canaryProblems(c.ID)...)
	o := scanOpts{extra: c.MustNotLeak}
	problems = append(problems, env.scan.scan("stdout", r.stdout, o)...)
	problems = append(problems, env.scan.scan("stderr", r.stderr, o)...)
	if v.answered {
		t.Logf("allowed=%v reason=%q warnings=%q", v.allowed, shorten(v.reason), v.warnings)
	}
	finish(t, c, "offline", problems)
}
