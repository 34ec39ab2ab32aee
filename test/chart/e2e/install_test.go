// Package e2e installs the chart with `helm install` into a real kube-apiserver
// on 127.0.0.1 with webhook.url pointing at a controller running outside the
// cluster (in this process, configured from the installed Deployment's
// arguments), and shows kubectl denying a bad Ingress with its reason.
//
// It needs helm (hack/helm.sh), kube-apiserver/etcd/kubectl
// (hack/k8s-assets.sh) and haproxy; when one is missing the test fails under
// CI=true and is skipped otherwise. -short skips it.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-template/htc/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/controller"
)

const (
	release = "htc"
	ns      = "htc-system"
)

var (
	root       string
	helm       string
	kubectlBin string
	kubeconfig string
	setupErr   error
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse() // testing.Short needs the flags
	if testing.Short() {
		fmt.Println("chart e2e: skipped in -short mode")
		return 0
	}
	var err error
	if root, err = filepath.Abs("../../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if !strings.Contains(os.Getenv("PATH"), "/usr/sbin") {
		os.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin")
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		setupErr = fmt.Errorf("haproxy not found in PATH (run 'make haproxy')")
		return m.Run()
	}
	if helm, err = lastLine(run(nil, nil, filepath.Join(root, "hack", "helm.sh"))); err != nil {
		setupErr = fmt.Errorf("hack/helm.sh: %w", err)
		return m.Run()
	}
	assets, err := lastLine(run(nil, nil, filepath.Join(root, "hack", "k8s-assets.sh")))
	if err != nil {
		setupErr = fmt.Errorf("hack/k8s-assets.sh: %w", err)
		return m.Run()
	}
	kubectlBin = filepath.Join(assets, "kubectl")
	dir, err := os.MkdirTemp("", "htc-chart-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	apiDir := filepath.Join(dir, "apiserver")
	defer func() {
		if _, err := run(nil, nil, filepath.Join(root, "hack", "apiserver-down.sh"), apiDir); err != nil {
			fmt.Fprintln(os.Stderr, "chart e2e: apiserver-down.sh:", err)
		}
	}()
	start := time.Now()
	if kubeconfig, err = lastLine(run([]string{"HTC_ASSETS_DIR=" + assets}, nil, filepath.Join(root, "hack", "apiserver-up.sh"), apiDir)); err != nil {
		// the assets exist, so a start failure is a real failure
		fmt.Fprintln(os.Stderr, "chart e2e: FAIL: hack/apiserver-up.sh:", err)
		return 1
	}
	fmt.Printf("chart e2e: kube-apiserver ready (%.1fs)\n", time.Since(start).Seconds())
	os.Setenv("HELM_CACHE_HOME", filepath.Join(dir, "helm", "cache"))
	os.Setenv("HELM_CONFIG_HOME", filepath.Join(dir, "helm", "config"))
	os.Setenv("HELM_DATA_HOME", filepath.Join(dir, "helm", "data"))
	return m.Run()
}

func run(env []string, stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func lastLine(out string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l, nil
	}
	return "", fmt.Errorf("no output")
}

func kubectl(args ...string) (string, error) {
	return run([]string{"KUBECONFIG=" + kubeconfig}, nil, kubectlBin, args...)
}

func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(testutil.FreeAddr(t))
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	return n
}

type syncBuffer = testutil.SyncBuffer

// controllerArgs returns the --flag=value arguments of the installed
// Deployment's controller container.
func controllerArgs(t *testing.T) map[string]string {
	t.Helper()
	out, err := kubectl("get", "deployment", "-n", ns, "htc", "-o", "json")
	require.NoError(t, err)
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string   `json:"name"`
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	args := map[string]string{}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "controller" {
			continue
		}
		require.NotEmpty(t, c.Args)
		assert.Equal(t, "controller", c.Args[0])
		for _, a := range c.Args[1:] {
			k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			require.True(t, ok, "argument %q is --flag=value", a)
			args[k] = v
		}
	}
	require.NotEmpty(t, args, "controller container")
	// the flags of `htc controller` (cmd/htc/controller.go) the chart sets
	known := []string{"config-namespace", "config-name", "webhook-port", "webhook-cert-secret", "metrics-bind-address", "health-probe-bind-address", "log-level", "log-format",
		"webhook-configuration", "deployment-name", "shutdown-delay", "leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"}
	for k := range args {
		assert.Contains(t, known, k, "the chart passes an unexpected flag --%s", k)
	}
	assert.Equal(t, "9443", args["webhook-port"])
	assert.Equal(t, ns+"/htc-webhook-tls", args["webhook-cert-secret"])
	assert.Equal(t, "htc", args["webhook-configuration"])
	assert.Equal(t, "htc", args["deployment-name"])
	assert.Equal(t, "true", args["leader-elect"])
	return args
}

func TestHelmInstalledWebhookDeniesBadIngress(t *testing.T) {
	if setupErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("unavailable (CI=true, so this is a failure): %v", setupErr)
		}
		t.Skipf("unavailable, skipping (set CI=true to make this a failure): %v", setupErr)
	}
	port := freePort(t)
	url := fmt.Sprintf("https://127.0.0.1:%d/validate", port)
	_, err := kubectl("create", "namespace", ns)
	require.NoError(t, err)

	start := time.Now()
	out, err := run([]string{"KUBECONFIG=" + kubeconfig}, nil, helm, "install", release, filepath.Join(root, "charts", "htc"),
		"--namespace", ns, "--set", "webhook.url="+url)
	require.NoError(t, err, out)
	t.Logf("helm install: %.1fs", time.Since(start).Seconds())
	assert.Contains(t, out, `admission webhook "ingresses.validate.htc" denied the request`, "NOTES.txt shows a denial")

	// Installed, nothing is registered: without a ready controller, writes
	// are admitted (the bad Ingress of the examples included).
	out, err = kubectl("get", "validatingwebhookconfiguration", "htc", "-o", "jsonpath={.webhooks}")
	require.NoError(t, err)
	assert.Empty(t, out, "helm install registers no webhook")
	_, err = kubectl("create", "namespace", "htc-demo")
	require.NoError(t, err)
	out, err = kubectl("-n", "htc-demo", "create", "ingress", "before", "--class=htc", "--rule=before.example.com/*=api:80", "--dry-run=server")
	require.NoError(t, err, "a write before any controller is ready is admitted: %s", out)

	// The controller runs out of cluster with the installed Deployment's
	// arguments; the webhook listens on loopback only.
	args := controllerArgs(t)
	durations := map[string]time.Duration{}
	for _, k := range []string{"leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"} {
		d, err := time.ParseDuration(args[k])
		require.NoError(t, err, k)
		durations[k] = d
	}
	logs := &syncBuffer{}
	health := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Options{
			Kubeconfig:      kubeconfig,
			ConfigNamespace: args["config-namespace"],
			ConfigName:      args["config-name"],
			CertSecret:      args["webhook-cert-secret"],
			WebhookAddr:     fmt.Sprintf("127.0.0.1:%d", port),
			HealthAddr:      health,
			// the chart's registration and election flags
			WebhookConfiguration: args["webhook-configuration"],
			DeploymentName:       args["deployment-name"],
			LeaderElection:       args["leader-elect"] == "true",
			LeaseDuration:        durations["leader-elect-lease-duration"],
			RenewDeadline:        durations["leader-elect-renew-deadline"],
			RetryPeriod:          durations["leader-elect-retry-period"],
			Logger:               slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "controller.Run")
		case <-time.After(40 * time.Second):
			t.Errorf("controller.Run did not return 40 s after cancellation")
		}
		if t.Failed() {
			t.Logf("controller logs:\n%s", logs)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + health + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			done <- err // for the cleanup, which would wait 40 s for it otherwise
			t.Fatalf("controller.Run returned: %v\n%s", err, logs)
		default:
		}
		require.True(t, time.Now().Before(deadline), "controller not ready after 60 s:\n%s", logs)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("controller ready: %.1fs after helm install", time.Since(start).Seconds())

	// The state (a Service, its endpoints, a TLS Secret, an Ingress) goes
	// through the webhook; the stores may lag one object behind, so retry.
	state := filepath.Join(root, "examples", "ingress", "state")
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err := kubectl("apply", "-f", state)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "state not admitted within 30 s: %v\n%s", out, logs)
		time.Sleep(200 * time.Millisecond)
	}

	// The API server picks the ValidatingWebhookConfiguration up
	// asynchronously: wait until it calls the webhook (a dry run is denied).
	bad := filepath.Join(root, "examples", "ingress", "bad-ingress.yaml")
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err = kubectl("apply", "--dry-run=server", "-f", bad)
		if err != nil && strings.Contains(out, "denied the request") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the API server does not call the webhook 30 s after it was ready: %v\n%s", out, logs)
		time.Sleep(200 * time.Millisecond)
	}
	out, err = kubectl("apply", "-f", bad)
	require.Error(t, err, "the bad Ingress is denied")
	assert.Contains(t, out, `admission webhook "ingresses.validate.htc" denied the request: Service 'api' not found`)
	t.Logf("kubectl apply -f bad-ingress.yaml: %s", strings.TrimSpace(out))

	out, err = kubectl("apply", "-f", filepath.Join(root, "examples", "ingress", "good-ingress.yaml"))
	require.NoError(t, err, "the good Ingress is admitted: %s", out)

	// A config change that breaks HAProxy is denied by the config's own webhook.
	out, err = run([]string{"KUBECONFIG=" + kubeconfig}, nil, helm, "upgrade", release, filepath.Join(root, "charts", "htc"),
		"--namespace", ns, "--reuse-values", "--set-string", "config.extraContext.httpPort=notaport")
	require.Error(t, err, "helm upgrade with a broken config is refused: %s", out)
	assert.Contains(t, out, `admission webhook "haproxytemplateconfigs.validate.htc" denied the request`)
	t.Logf("helm upgrade (broken config): %s", lastNonEmpty(out))

	// The denial NOTES.txt tells users to try.
	out, err = kubectl("-n", "htc-demo", "create", "ingress", "bad", "--class=htc", "--rule=bad.example.com/*=api:80")
	require.Error(t, err, "the NOTES.txt example is denied: %s", out)
	assert.Contains(t, out, `admission webhook "ingresses.validate.htc" denied the request: Service 'api' not found`)
	t.Logf("NOTES.txt example: %s", strings.TrimSpace(out))

	// The emergency exit of the README and NOTES.txt.
	_, err = kubectl("delete", "validatingwebhookconfiguration", "htc")
	require.NoError(t, err)
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err = kubectl("apply", "-f", bad)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the bad Ingress is still denied 30 s after the webhook configuration was deleted: %s", out)
		time.Sleep(200 * time.Millisecond)
	}
	_, err = kubectl("delete", "-f", bad)
	require.NoError(t, err)

	// `helm upgrade` puts it back, empty; the running controller registers
	// the webhooks again.
	out, err = run([]string{"KUBECONFIG=" + kubeconfig}, nil, helm, "upgrade", release, filepath.Join(root, "charts", "htc"),
		"--namespace", ns, "--set", "webhook.url="+url)
	require.NoError(t, err, out)
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err = kubectl("apply", "--dry-run=server", "-f", bad)
		if err != nil && strings.Contains(out, "denied the request") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the webhooks are not registered again 30 s after helm upgrade: %v\n%s", out, logs)
		time.Sleep(200 * time.Millisecond)
	}

	// `helm uninstall` leaves nothing registered.
	out, err = run([]string{"KUBECONFIG=" + kubeconfig}, nil, helm, "uninstall", release, "--namespace", ns, "--wait")
	require.NoError(t, err, out)
	_, err = kubectl("get", "validatingwebhookconfiguration", "htc")
	require.Error(t, err, "helm uninstall deletes the ValidatingWebhookConfiguration")
	out, err = kubectl("get", "validatingwebhookconfigurations", "-o", "jsonpath={.items[*].metadata.name}")
	require.NoError(t, err)
	assert.Empty(t, out, "no ValidatingWebhookConfiguration is left")
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err = kubectl("apply", "--dry-run=server", "-f", bad)
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the bad Ingress is still refused 30 s after helm uninstall: %s", out)
		time.Sleep(200 * time.Millisecond)
	}
}

func lastNonEmpty(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
