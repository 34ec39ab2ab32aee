// Package e2e runs htc's controller against a real kube-apiserver and etcd
// on 127.0.0.1 (built by hack/k8s-assets.sh, started by hack/apiserver-up.sh)
// and reads the webhook's denials with the built kubectl.
//
// When the assets cannot be built (no network, no Go module proxy) the suite
// fails under CI=true and is skipped with a message otherwise. -short skips
// it too.
package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// env is what TestMain prepared for the tests.
var env struct {
	root       string // repository root
	assets     string // directory with kube-apiserver, etcd, kubectl
	kubeconfig string
	dir        string // temporary directory of this run
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		return 0
	}
	ci := os.Getenv("CI") == "true"
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.root = root
	// haproxy is installed in /usr/sbin by the Debian package.
	if !strings.Contains(os.Getenv("PATH"), "/usr/sbin") {
		os.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin")
	}
	unavailable := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		if ci {
			fmt.Fprintln(os.Stderr, "e2e: FAIL:", msg)
			return 1
		}
		fmt.Println("e2e: SKIP (set CI=true to make this a failure):", msg)
		return 0
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		return unavailable("haproxy not found in PATH (run 'make haproxy')")
	}

	start := time.Now()
	out, err := script(root, "hack/k8s-assets.sh")
	if err != nil {
		return unavailable("hack/k8s-assets.sh could not provide kube-apiserver, etcd and kubectl: %v\n%s", err, tail(out, 20))
	}
	env.assets = lastLine(out)
	fmt.Printf("e2e: assets in %s (%s)\n", env.assets, time.Since(start).Round(time.Millisecond))

	dir, err := os.MkdirTemp("", "htc-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.dir = dir
	defer os.RemoveAll(dir)

	start = time.Now()
	apiDir := filepath.Join(dir, "apiserver")
	defer func() {
		if out, err := script(root, "hack/apiserver-down.sh", apiDir); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: hack/apiserver-down.sh: %v\n%s\n", err, out)
		}
	}()
	out, err = scriptEnv(root, []string{"HTC_ASSETS_DIR=" + env.assets}, "hack/apiserver-up.sh", apiDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: hack/apiserver-up.sh: %v\n%s\n", err, tail(out, 30))
		return 1
	}
	env.kubeconfig = lastLine(out)
	fmt.Printf("e2e: kube-apiserver ready (%s)\n", time.Since(start).Round(time.Millisecond))
	return m.Run()
}

func script(root, name string, args ...string) (string, error) {
	return scriptEnv(root, nil, name, args...)
}

// scriptEnv runs a hack/ script and returns its stdout and stderr together
// (the scripts print their result on the last line of stdout, and only
// progress on stderr, so the combined output's last stdout line is found by
// running them with stderr kept apart).
func scriptEnv(root string, extraEnv []string, name string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, name), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
