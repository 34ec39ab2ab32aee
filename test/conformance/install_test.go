package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
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
// package's values.yaml, and waits for the pod.
func (e *env) helmInstall(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, e.helm, "install", release, filepath.Join(e.root, "charts", "htc"),
		"--namespace", ns, "--create-namespace",
		"-f", filepath.Join(e.root, "charts", "htc", "values-gateway.yaml"),
		"-f", filepath.Join(e.root, "test", "conformance", "values.yaml"),
		"--set", "image.repository="+e.htcRepo, "--set", "image.tag="+e.htcTag, "--set", "image.pullPolicy=Never",
		"--wait", "--timeout", "5m")
	// The pod runs in the node's network namespace, which is this
	// machine's: its ports (values.yaml's) are taken by another process at
	// times, and the controller then exits ("address already in use").
	// Ports free now are used instead.
	ports, err := freeHostPorts(4)
	if err != nil {
		return err
	}
	cmd.Args = append(cmd.Args, "--set", fmt.Sprintf("controller.webhookPort=%d", ports[0]), "--set", fmt.Sprintf("controller.healthPort=%d", ports[1]),
		"--set", fmt.Sprintf("config.extraContext.healthPort=%d", ports[2]), "--set", fmt.Sprintf("config.extraContext.mirrorPort=%d", ports[3]))
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

// freeHostPorts returns n distinct ports of 18000-19999 that no process
// holds now on any address of this machine.
func freeHostPorts(n int) ([]int, error) {
	var out []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for p := 18000 + rand.IntN(1000); p < 20000 && len(out) < n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			continue
		}
		held = append(held, l)
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("fewer than %d free ports in 18000-19999", n)
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
