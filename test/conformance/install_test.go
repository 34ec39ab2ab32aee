package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
)

// install installs the Gateway API CRDs (the standard channel of the
// module in go.mod), htc with helm, and the GatewayClass htc.
func (e *env) install(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	c := e.cluster
	var names []string
	for _, crd := range testutil.GatewayAPICRDs(t) {
		// Server-side: the CRDs are too large for the last-applied annotation.
		out, err := c.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", crd)
		require.NoError(t, err, out)
		plural := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(crd), "gateway.networking.k8s.io_"), ".yaml")
		names = append(names, "crd/"+plural+".gateway.networking.k8s.io")
	}
	out, err := c.Kubectl(ctx, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)...)
	require.NoError(t, err, out)
	require.NoError(t, e.helmInstall(ctx))
	gc := fmt.Sprintf(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"GatewayClass","metadata":{"name":%q},"spec":{"controllerName":%q}}`, gatewayClass, controllerName)
	out, err = e.kubectlStdin(ctx, gc, "apply", "-f", "-")
	require.NoError(t, err, "the GatewayClass: %s", out)
	// The suite reads the features to test from the GatewayClass's status,
	// written with Accepted.
	out, err = c.Kubectl(ctx, "wait", "--for=condition=Accepted", "--timeout=60s", "gatewayclass/"+gatewayClass)
	require.NoError(t, err, out)
}

// helmInstall installs the chart with the Gateway library and this
// package's values.yaml, and waits for the pod.
func (e *env) helmInstall(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, e.helm, "install", release, filepath.Join(e.root, "charts", "htc"),
		"--namespace", ns, "--create-namespace",
		"-f", filepath.Join(e.root, "charts", "htc", "values-gateway.yaml"),
		"-f", filepath.Join(e.root, "test", "conformance", "values.yaml"),
		"--set", "image.repository="+e.htcRepo, "--set", "image.tag="+e.htcTag, "--set", "image.pullPolicy=Never",
		"--wait", "--timeout", "5m")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	t := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		pods, _ := e.cluster.Kubectl(ctx, "-n", ns, "describe", "pods")
		return fmt.Errorf("helm install: %w\n%s\n%s", err, out, pods)
	}
	fmt.Printf("test/conformance: helm install --wait %.1fs\n", time.Since(t).Seconds())
	return nil
}

func (e *env) kubectlStdin(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.cluster.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
