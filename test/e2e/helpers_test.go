package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-template/htc/internal/testutil"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/controller"
)

// kubectlResult is one kubectl run.
type kubectlResult struct {
	stdout, stderr string
	err            error
}

func (r kubectlResult) String() string {
	return fmt.Sprintf("err=%v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// kubectl runs the built kubectl against the test apiserver, with stdin.
// It works in t.Cleanup too: t.Context() is cancelled before cleanups run,
// which killed every kubectl there (nothing was deleted).
func kubectl(t *testing.T, stdin string, args ...string) kubectlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.assets, "kubectl"), append([]string{"--kubeconfig", env.kubeconfig, "--cache-dir", filepath.Join(env.dir, "kubectl-cache")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return kubectlResult{stdout: stdout.String(), stderr: strings.TrimSpace(stderr.String()), err: err}
}

// cleanupKubectl runs kubectl in a cleanup and reports a failure without
// stopping the other cleanups.
func cleanupKubectl(t *testing.T, args ...string) {
	t.Helper()
	if r := kubectl(t, "", args...); r.err != nil {
		t.Errorf("cleanup: kubectl %s\n%s", strings.Join(args, " "), r)
	}
}

// mustKubectl runs kubectl and fails the test when it fails.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := kubectl(t, stdin, args...)
	require.NoError(t, r.err, "kubectl %s\n%s", strings.Join(args, " "), r)
	return r.stdout
}

// eventually runs kubectl until ok accepts the result or timeout passes
// (the controller's informers see a change a few milliseconds after the
// API server committed it).
func eventually(t *testing.T, timeout time.Duration, ok func(kubectlResult) bool, stdin string, args ...string) (kubectlResult, int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		r := kubectl(t, stdin, args...)
		if ok(r) || time.Now().After(deadline) {
			return r, attempt
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// certs are a CA and a serving certificate for 127.0.0.1 signed by it.
type certs struct {
	caPEM              []byte
	certFile, keyFile  string
	servingCertExpires time.Time
}

func generateCerts(t *testing.T, dir string) certs {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "htc-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(12 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)

	c := certs{
		caPEM:              pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certFile:           filepath.Join(dir, "tls.crt"),
		keyFile:            filepath.Join(dir, "tls.key"),
		servingCertExpires: tmpl.NotAfter,
	}
	require.NoError(t, os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return c
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string { return testutil.FreeAddr(t) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testutil.SyncBuffer

// The controller's admission deadline in these tests, and the API server's
// webhook timeout above it (30 s is the most it allows).
const (
	admissionTimeout      = 25 * time.Second
	webhookTimeoutSeconds = 30
)

// runningController is an in-process controller.Run.
type runningController struct {
	webhookAddr, healthAddr, metricsAddr string
	logs                                 *syncBuffer
	// stop stops the controller and waits for Run to return (at most 40 s);
	// t.Cleanup calls it too, it stops once.
	stop func()
}

// startController runs the controller for the example config
// (htc-system/htc) until the test ends; t.Cleanup stops it and waits for Run
// to return. Each edit, when given, changes the options before Run.
func startController(t *testing.T, c certs, edits ...func(*controller.Options)) *runningController {
	t.Helper()
	rc := &runningController{healthAddr: freeAddr(t), metricsAddr: freeAddr(t), logs: &syncBuffer{}}
	listening := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := controller.Options{
		Kubeconfig:      env.kubeconfig,
		ConfigNamespace: "htc-system",
		ConfigName:      "htc",
		WebhookAddr:     "127.0.0.1:0",
		CertFile:        c.certFile,
		KeyFile:         c.keyFile,
		MetricsAddr:     rc.metricsAddr,
		HealthAddr:      rc.healthAddr,
		// Debug: the shadow checks say what each check agreed on.
		Logger:      slog.New(slog.NewTextHandler(rc.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnListening: func(a net.Addr) { listening <- a },
		// A config's admission runs its embedded tests; on a busy machine
		// under -race that can take longer than the 5 s default, which
		// would make the reason a timeout instead of the one the test
		// reads. The webhook's timeoutSeconds is above it.
		AdmissionTimeout: admissionTimeout,
	}
	for _, edit := range edits {
		edit(&opts)
	}
	go func() { done <- controller.Run(ctx, opts) }()
	var once sync.Once
	rc.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("controller.Run: %v", err)
				}
			case <-time.After(40 * time.Second):
				t.Errorf("controller.Run did not return 40 s after cancellation")
			}
		})
	}
	t.Cleanup(func() {
		rc.stop()
		if t.Failed() || testing.Verbose() {
			t.Logf("controller logs:\n%s", tail(rc.logs.String(), 60))
		}
	})
	select {
	case a := <-listening:
		rc.webhookAddr = a.String()
	case err := <-done:
		done <- err // for rc.stop, which would wait 40 s for it otherwise
		t.Fatalf("controller.Run returned early: %v\n%s", err, rc.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("the webhook did not listen within 30 s\n%s", rc.logs)
	}
	return rc
}

// get fetches a plain-HTTP URL of the controller (its timeout is a
// failsafe: a busy machine under -race answers slowly, not wrongly).
func get(url string) (int, string, error) {
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// waitReady waits until /readyz answers 200.
func (rc *runningController) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := get("http://" + rc.healthAddr + "/readyz")
		if err == nil && code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 after %s: %d %q %v\n%s", timeout, code, body, err, tail(rc.logs.String(), 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookConfiguration returns the ValidatingWebhookConfiguration of the
// example's kinds plus ConfigMaps (which only the reconfiguration scenario
// watches) and Secrets (which only the verdict scenarios validate), in the
// namespaces default and htc-system, pointing at url with caBundle. The
// watched resources' DELETEs are intercepted as the controller registers
// them; a config's are not.
func webhookConfiguration(url string, caPEM []byte) string {
	ca := base64.StdEncoding.EncodeToString(caPEM)
	hook := func(name, group, version, resource, operations string) string {
		return fmt.Sprintf(`- name: %s
  clientConfig:
    url: %s
    caBundle: %s
  rules:
  - apiGroups: [%q]
    apiVersions: [%q]
    resources: [%q]
    operations: [%s]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: %d
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: In, values: [default, htc-system]}
`, name, url, ca, group, version, resource, operations, webhookTimeoutSeconds)
	}
	const resourceOps, configOps = "CREATE, UPDATE, DELETE", "CREATE, UPDATE"
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: htc\nwebhooks:\n" +
		hook("ingresses.validate.htc", "networking.k8s.io", "v1", "ingresses", resourceOps) +
		hook("services.validate.htc", "", "v1", "services", resourceOps) +
		hook("haproxytemplateconfigs.validate.htc", "haproxy-template.io", "v1alpha1", "haproxytemplateconfigs", configOps) +
		hook("configmaps.validate.htc", "", "v1", "configmaps", resourceOps) +
		hook("secrets.validate.htc", "", "v1", "secrets", resourceOps)
}

// waitCRDEstablished waits until the API server reports the CRD named name
// Established. It reads the condition itself rather than running `kubectl
// wait`, which fails at once ("accessor error") when it reads the CRD before
// the API server wrote any status.
func waitCRDEstablished(t *testing.T, name string) {
	t.Helper()
	r, attempts := eventually(t, 30*time.Second, func(r kubectlResult) bool { return r.err == nil && r.stdout == "True" },
		"", "get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
	require.Equal(t, "True", r.stdout, "CRD %s not Established after %d reads: %s", name, attempts, r)
}
