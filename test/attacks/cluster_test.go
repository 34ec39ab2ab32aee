package attacks

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
)

// cluster is the test API server of this run, started once by the first
// test that needs it (TestHTTPS, TestBoundedWorstCase) and stopped by TestMain.
var cluster struct {
	once       sync.Once
	skip, err  string
	started    bool
	dir        string
	assets     string
	kubeconfig string
	cert       testutil.Cert
	certFile   string
	keyFile    string
	// timeout is the API server's webhook timeout and memLimit the
	// controller's memory limit, both from charts/htc/values.yaml.
	timeout  time.Duration
	memLimit int64
}

// ensureCluster starts the API server and loads the CRDs (htc's and the
// Gateway API's standard channel), the state and the base configs ("htc" =
// example, "wide", "gateway", and "bounded" = the wide config under
// another name, for the bounded test's own controller). Without the assets
// (no Go module proxy) the test is skipped, or fails under CI=true.
func ensureCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the API server runs are skipped in -short mode")
	}
	cluster.once.Do(startCluster)
	if cluster.skip != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(cluster.skip)
		}
		t.Skip(cluster.skip + " (set CI=true to make this a failure)")
	}
	if cluster.err != "" {
		t.Fatal(cluster.err)
	}
}

func startCluster() {
	var err error
	if cluster.timeout, cluster.memLimit, err = chartLimits(); err != nil {
		cluster.err = err.Error()
		return
	}
	out, err := script(nil, "hack/k8s-assets.sh")
	if err != nil {
		cluster.skip = fmt.Sprintf("hack/k8s-assets.sh could not provide kube-apiserver, etcd and kubectl: %v\n%s", err, tail(out, 20))
		return
	}
	cluster.assets = lastLine(out)
	cluster.dir = filepath.Join(env.root, "apiserver")
	cluster.started = true
	out, err = script([]string{"HTC_ASSETS_DIR=" + cluster.assets}, "hack/apiserver-up.sh", cluster.dir)
	if err != nil {
		cluster.err = fmt.Sprintf("hack/apiserver-up.sh: %v\n%s", err, tail(out, 30))
		return
	}
	cluster.kubeconfig = lastLine(out)

	cluster.cert = testutil.SelfSigned(panicTB{}, "127.0.0.1", time.Now().Add(24*time.Hour))
	cluster.certFile = filepath.Join(cluster.dir, "webhook.crt")
	cluster.keyFile = filepath.Join(cluster.dir, "webhook.key")
	if err := os.WriteFile(cluster.certFile, cluster.cert.CertPEM, 0o600); err != nil {
		cluster.err = err.Error()
		return
	}
	if err := os.WriteFile(cluster.keyFile, cluster.cert.KeyPEM, 0o600); err != nil {
		cluster.err = err.Error()
		return
	}

	crd := filepath.Join(env.repo, "charts/htc/crds/haproxy-template.io_haproxytemplateconfigs.yaml")
	bounded := baseConfigObject("wide")
	bounded["metadata"].(map[string]any)["name"] = "bounded"
	boundedFile, err := writeJSON(cluster.dir, "bounded.json", bounded)
	if err != nil {
		cluster.err = err.Error()
		return
	}
	steps := [][]string{
		{"apply", "-f", crd},
		{"wait", "--for=condition=Established", "--timeout=60s", "crd/haproxytemplateconfigs.haproxy-template.io"},
	}
	// The Gateway API's standard CRDs, from the module go.mod requires
	// (server-side: they are too large for the last-applied annotation).
	for _, f := range testutil.GatewayAPICRDs(panicTB{}) {
		steps = append(steps, []string{"apply", "--server-side", "--force-conflicts", "-f", f})
	}
	steps = append(steps,
		[]string{"wait", "--for=condition=Established", "--timeout=60s", "crd/gatewayclasses.gateway.networking.k8s.io",
			"crd/gateways.gateway.networking.k8s.io", "crd/httproutes.gateway.networking.k8s.io", "crd/referencegrants.gateway.networking.k8s.io"},
		[]string{"apply", "-f", env.state},
		[]string{"apply", "-f", env.configs["example"]},
		[]string{"apply", "-f", env.configs["wide"]},
		// server-side: the Gateway library is too large for the
		// last-applied annotation (256 KiB) that client-side apply writes
		[]string{"apply", "--server-side", "--force-conflicts", "-f", env.configs["gateway"]},
		[]string{"apply", "-f", env.configs["nginx"]},
		[]string{"apply", "-f", boundedFile},
	)
	for _, args := range steps {
		// Namespaces and a new CRD become usable a moment after they
		// were created: retry until kubectl succeeds (bounded).
		var r kubectlResult
		for attempt := 0; attempt < 60; attempt++ {
			if r = kubectl(context.Background(), "", args...); r.err == nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if r.err != nil {
			cluster.err = fmt.Sprintf("kubectl %s: %s", strings.Join(args, " "), r)
			return
		}
	}
}

// stopCluster stops the API server if it was started.
func stopCluster() {
	if !cluster.started {
		return
	}
	if out, err := script(nil, "hack/apiserver-down.sh", cluster.dir); err != nil {
		fmt.Fprintf(os.Stderr, "attacks: hack/apiserver-down.sh: %v\n%s\n", err, out)
	}
}

// chartLimits reads the API server's webhook timeout and the controller's
// memory limit from the chart's values.
func chartLimits() (time.Duration, int64, error) {
	b, err := os.ReadFile(filepath.Join(env.repo, "charts/htc/values.yaml"))
	if err != nil {
		return 0, 0, err
	}
	var v struct {
		Controller struct {
			Resources struct {
				Limits struct {
					Memory string `json:"memory"`
				} `json:"limits"`
			} `json:"resources"`
		} `json:"controller"`
		Webhook struct {
			TimeoutSeconds int `json:"timeoutSeconds"`
		} `json:"webhook"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return 0, 0, fmt.Errorf("charts/htc/values.yaml: %w", err)
	}
	if v.Webhook.TimeoutSeconds <= 0 {
		return 0, 0, errors.New("charts/htc/values.yaml: no webhook.timeoutSeconds")
	}
	q, err := resource.ParseQuantity(v.Controller.Resources.Limits.Memory)
	if err != nil {
		return 0, 0, fmt.Errorf("charts/htc/values.yaml: controller.resources.limits.memory: %w", err)
	}
	return time.Duration(v.Webhook.TimeoutSeconds) * time.Second, q.Value(), nil
}

// panicTB satisfies testing.TB for helpers called outside a test.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                           {}
func (panicTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (panicTB) FailNow()                          { panic("FailNow") }

// script runs a hack/ script; stdout (whose last line is its result) and,
// on failure, stderr are returned.
func script(extraEnv []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.repo, name), args...)
	cmd.Dir = env.repo
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
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

// kubectlResult is one kubectl run.
type kubectlResult struct {
	stdout, stderr string
	err            error
}

func (r kubectlResult) String() string {
	return fmt.Sprintf("err=%v stdout=%q stderr=%q", r.err, shorten(r.stdout), shorten(r.stderr))
}

// kubectl runs the built kubectl against the test API server.
func kubectl(ctx context.Context, stdin string, args ...string) kubectlResult {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.assets, "kubectl"),
		append([]string{"--kubeconfig", cluster.kubeconfig, "--cache-dir", filepath.Join(cluster.dir, "kubectl-cache")}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return kubectlResult{stdout: stdout.String(), stderr: strings.TrimSpace(stderr.String()), err: err}
}

// controllerProc is a running `htc controller` (the built binary, so that
// its environment is the planted one and its memory is its own).
type controllerProc struct {
	config          string
	pid             int
	url             string // https://127.0.0.1:PORT/validate
	health, metrics string
	logs            *testutil.SyncBuffer
	// exited is closed once the process exited; waitErr is then what
	// Wait returned. (A closed channel, so that every waiter sees it: a
	// one-value channel drained by one waiter hung the next one.)
	exited  chan struct{}
	waitErr error
	// failedEarly is set when the process exited before it was ready
	// (reported then, not again by the cleanup).
	failedEarly bool
}

// startController runs `htc controller` for config htc-system/<config>
// until the test ends, and waits until /readyz answers 200 (the stores of
// its config synced).
func startController(t *testing.T, config string) *controllerProc {
	t.Helper()
	webhook := testutil.FreeAddr(t)
	_, port, _ := net.SplitHostPort(webhook)
	cp := &controllerProc{config: config, health: testutil.FreeAddr(t), metrics: testutil.FreeAddr(t),
		logs: &testutil.SyncBuffer{}, exited: make(chan struct{}), url: "https://" + webhook + "/validate"}
	tmp := filepath.Join(env.tmp, "controller-"+config)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.htc, "controller",
		"--kubeconfig", cluster.kubeconfig,
		"--config-namespace", configNamespace, "--config-name", config,
		"--webhook-bind-address", "127.0.0.1", "--webhook-port", port,
		"--webhook-cert-file", cluster.certFile, "--webhook-key-file", cluster.keyFile,
		"--metrics-bind-address", cp.metrics, "--health-probe-bind-address", cp.health)
	cmd.Env = htcEnv(tmp)
	cmd.Dir = tmp
	cmd.Stdout, cmd.Stderr = cp.logs, cp.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cp.pid = cmd.Process.Pid
	go func() { cp.waitErr = cmd.Wait(); close(cp.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cp.exited:
			if cp.waitErr != nil && !cp.failedEarly {
				t.Errorf("htc controller (%s) exited with %v after SIGTERM", config, cp.waitErr)
			}
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-cp.pid, syscall.SIGKILL)
			t.Errorf("htc controller (%s) did not exit 40 s after SIGTERM", config)
			<-cp.exited
		}
		if t.Failed() && testing.Verbose() {
			t.Logf("controller %s logs:\n%s", config, tail(cp.logs.String(), 40))
		}
		// No planted secret may be in what it logged outside the
		// corpus's requests (start-up, config loading, live rounds); the
		// lines of each request were scanned with its case.
		var other []string
		for _, line := range strings.Split(cp.logs.String(), "\n") {
			if !strings.Contains(line, `"uid":"attacks-`) {
				other = append(other, line)
			}
		}
		for _, f := range env.scan.scanLogLines("controller "+config+" log", strings.Join(other, "\n"), scanOpts{noDetails: true}) {
			t.Errorf("%s", f)
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := client.Get("http://" + cp.health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cp
			}
		}
		select {
		case <-cp.exited:
			cp.failedEarly = true
			t.Fatalf("htc controller (%s) exited before it was ready: %v\n%s", config, cp.waitErr, tail(cp.logs.String(), 30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("htc controller (%s) not ready after 90 s\n%s", config, tail(cp.logs.String(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive reports whether the controller process still runs.
func (cp *controllerProc) alive() bool {
	select {
	case <-cp.exited:
		return false
	default:
		return true
	}
}

// webhookClient is an HTTPS client trusting the serving certificate, whose
// timeout is the API server's webhook timeout: an answer that comes later
// is no answer for the API server either.
func webhookClient() *http.Client {
	return &http.Client{
		Timeout: cluster.timeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: cluster.cert.Pool(), MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 16,
		},
	}
}

// post sends one AdmissionReview and returns the response body.
func post(ctx context.Context, client *http.Client, url string, review []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(review))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

// waitLog waits until the controller logged a line containing s (the
// handler logs an admission after it wrote the response), bounded.
func (cp *controllerProc) waitLog(s string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for !strings.Contains(cp.logs.String(), s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// jsonString encodes s as JSON (for matching inside JSON log lines).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
