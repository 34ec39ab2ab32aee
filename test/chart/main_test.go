// Package chart tests the Helm chart in charts/htc: helm lint, golden
// `helm template` outputs, the one-source-of-truth property of the watched
// resources (RBAC, webhook rules and the HAProxyTemplateConfig are generated
// from the same values), and a server-side dry-run of every manifest against
// a real kube-apiserver on 127.0.0.1.
//
// helm comes from hack/helm.sh, kube-apiserver/etcd/kubectl from
// hack/k8s-assets.sh (both cached outside the repository). When one cannot be
// obtained the tests that need it fail if CI=true and are skipped otherwise.
package chart

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	releaseName = "htc"
	releaseNS   = "htc-system"
	kubeVersion = "1.34.0"
)

var (
	repoRoot string
	chartDir string

	helmBin    string
	helmErr    error
	apiOnce    sync.Once
	apiDir     string
	kubeconfig string
	kubectlBin string
	apiErr     error
)

func TestMain(m *testing.M) {
	flag.Parse()
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoRoot = root
	chartDir = filepath.Join(root, "charts", "htc")

	start := time.Now()
	helmBin, helmErr = lastLine(run(root, nil, nil, filepath.Join(root, "hack", "helm.sh")))
	if helmErr == nil {
		fmt.Fprintf(os.Stderr, "chart tests: helm %s (%.1fs)\n", helmBin, time.Since(start).Seconds())
	}

	code := m.Run()
	if apiDir != "" {
		if _, err := run(root, nil, nil, filepath.Join(root, "hack", "apiserver-down.sh"), apiDir); err != nil {
			fmt.Fprintln(os.Stderr, "chart tests: apiserver-down.sh:", err)
			code = 1
		}
		_ = os.RemoveAll(apiDir)
	}
	os.Exit(code)
}

// unavailable fails (CI=true) or skips the test because a tool is missing.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unavailable (CI=true, so this is a failure): %v", what, err)
	}
	t.Skipf("%s unavailable, skipping (set CI=true to make this a failure): %v", what, err)
}

func requireHelm(t *testing.T) string {
	t.Helper()
	if helmErr != nil {
		unavailable(t, "helm (hack/helm.sh)", helmErr)
	}
	return helmBin
}

// requireAPIServer starts (once) kube-apiserver and etcd on 127.0.0.1 with
// hack/apiserver-up.sh and returns the kubeconfig and kubectl paths.
func requireAPIServer(t *testing.T) (string, string) {
	t.Helper()
	apiOnce.Do(func() {
		start := time.Now()
		assets, err := lastLine(run(repoRoot, nil, nil, filepath.Join(repoRoot, "hack", "k8s-assets.sh")))
		if err != nil {
			apiErr = fmt.Errorf("hack/k8s-assets.sh: %w", err)
			return
		}
		kubectlBin = filepath.Join(assets, "kubectl")
		dir, err := os.MkdirTemp("", "htc-chart-apiserver-")
		if err != nil {
			apiErr = err
			return
		}
		apiDir = dir
		kc, err := lastLine(run(repoRoot, []string{"HTC_ASSETS_DIR=" + assets}, nil, filepath.Join(repoRoot, "hack", "apiserver-up.sh"), dir))
		if err != nil {
			apiErr = fmt.Errorf("hack/apiserver-up.sh: %w", err)
			return
		}
		kubeconfig = kc
		fmt.Fprintf(os.Stderr, "chart tests: kube-apiserver up (%.1fs)\n", time.Since(start).Seconds())
	})
	if apiErr != nil {
		unavailable(t, "kube-apiserver (hack/k8s-assets.sh, hack/apiserver-up.sh)", apiErr)
	}
	return kubeconfig, kubectlBin
}

// run runs a command in dir with extra environment and stdin; it returns
// stdout, or an error carrying stderr.
func run(dir string, env []string, stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func lastLine(out string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "", fmt.Errorf("no output")
	}
	return last, nil
}

// helmTemplate renders the chart as release htc in htc-system with the given
// extra helm arguments (--set, -f).
func helmTemplate(t *testing.T, args ...string) string {
	t.Helper()
	helm := requireHelm(t)
	full := append([]string{"template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}, args...)
	out, err := run(repoRoot, nil, nil, helm, full...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
