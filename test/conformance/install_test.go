package conformance

import (
	"context"
	"fmt"
	"net"
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
// package's values.yaml, and waits for the pod. The pod runs in the node's
// network namespace, which is this machine's: the controller's webhook and
// health ports and HAProxy's health and mirror ports are ports free here now
// (another process of the machine may hold any fixed one, and the
// controller then exits with "address already in use").
func (e *env) helmInstall(ctx context.Context) error {
	ports, err := freeHostPorts([]string{"", "", "127.0.0.1", "127.0.0.1"})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, e.helm, "install", release, filepath.Join(e.root, "charts", "htc"),
		"--namespace", ns, "--create-namespace",
		"-f", filepath.Join(e.root, "charts", "htc", "values-gateway.yaml"),
		"-f", filepath.Join(e.root, "test", "conformance", "values.yaml"),
		"--set", "image.repository="+e.htcRepo, "--set", "image.tag="+e.htcTag, "--set", "image.pullPolicy=Never",
		"--set", fmt.Sprintf("controller.webhookPort=%d", ports[0]), "--set", fmt.Sprintf("controller.healthPort=%d", ports[1]),
		"--set", fmt.Sprintf("config.extraContext.healthPort=%d", ports[2]), "--set", fmt.Sprintf("config.extraContext.mirrorPort=%d", ports[3]),
		"--wait", "--timeout", "5m")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	t := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		pods, _ := e.cluster.Kubectl(ctx, "-n", ns, "describe", "pods")
		// A controller that exits says why in its log: the last lines of
		// its previous run (a crash loop) and of the current one.
		prev, _ := e.cluster.Kubectl(ctx, "-n", ns, "logs", "-l", "app.kubernetes.io/name=htc", "-c", "controller", "--previous", "--tail=20")
		cur, _ := e.cluster.Kubectl(ctx, "-n", ns, "logs", "-l", "app.kubernetes.io/name=htc", "-c", "controller", "--tail=20")
		return fmt.Errorf("helm install: %w\n%s\n%s\ncontroller log (previous run):\n%s\ncontroller log:\n%s", err, out, pods, prev, cur)
	}
	fmt.Printf("test/conformance: helm install --wait %.1fs\n", time.Since(t).Seconds())
	return nil
}

// freeHostPorts returns a TCP port free now on each address of addrs (""
// is every interface), distinct from each other.
func freeHostPorts(addrs []string) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	out := make([]int, len(addrs))
	for i, a := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err != nil {
			return nil, fmt.Errorf("a free port on %q: %w", a, err)
		}
		held = append(held, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

func (e *env) kubectlStdin(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.cluster.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
