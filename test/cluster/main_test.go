// Package cluster installs htc as users do — the image `make image` builds
// and the Helm chart, HAProxy sidecar on — into a real single-node
// Kubernetes cluster on this machine (internal/testcluster,
// hack/cluster-up.sh: kubelet, containerd, runc, kube-proxy) and checks
// what only a cluster shows: every pod Ready as the non-root, read-only
// pods the chart makes, the in-cluster webhook denying through its Service,
// HAProxy in the pod routing to a Deployment's pods, leader failover and a
// rollout without a refused admission or a SIGKILLed container, helm
// upgrade and uninstall, metrics and /readyz through the Service, and the
// Prometheus Operator objects applying with their CRDs.
//
// It needs root and apt-get (the cluster's Debian packages are installed
// when missing); a machine without them fails with a message saying what
// is missing. -short skips it. The scenarios run in order in one
// installation (TestCluster); every wait is bounded and waits for what the
// cluster reports (conditions, the Lease, metrics, Events).
package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/haproxy-template/htc/internal/testcluster"
)

// env is what TestMain set up for the tests.
type env struct {
	root     string
	cluster  *testcluster.Cluster
	kube     kubernetes.Interface
	helm     string
	htcImage string // the imported htc image: repository and tag for the chart
	htcTag   string
	backend  string // the imported backend image
	helmHome string
}

var (
	setup    *env
	setupErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("test/cluster: skipped in -short mode (it runs a Kubernetes cluster)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	// Bounded: a cold machine builds the binaries and images first.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	e, err := prepare(ctx)
	if e != nil && e.cluster != nil {
		defer func() {
			t := time.Now()
			if err := e.cluster.Down(); err != nil {
				fmt.Fprintln(os.Stderr, "test/cluster: FAIL: cluster-down.sh:", err)
				os.Exit(1)
			}
			fmt.Printf("test/cluster: cluster down (%.1fs); whole package %.1fs\n", time.Since(t).Seconds(), time.Since(start).Seconds())
		}()
	}
	if e != nil && e.helmHome != "" {
		defer os.RemoveAll(e.helmHome)
	}
	setup, setupErr = e, err
	return m.Run()
}

// prepare builds the image, starts the cluster, imports the images.
func prepare(ctx context.Context) (*env, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	e := &env{root: root}
	t := time.Now()
	helmOut, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		return e, fmt.Errorf("hack/helm.sh: %w", err)
	}
	e.helm = lastLine(string(helmOut))
	if e.helmHome, err = os.MkdirTemp("", "htc-cluster-helm-"); err != nil {
		return e, err
	}
	for _, k := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		os.Setenv(k, filepath.Join(e.helmHome, strings.ToLower(k)))
	}
	archive, err := makeImage(ctx, root, e.helmHome)
	if err != nil {
		return e, err
	}
	images, err := testcluster.Images(ctx, root, os.Stderr)
	if err != nil {
		return e, err
	}
	fmt.Printf("test/cluster: image and tools ready (%.1fs)\n", time.Since(t).Seconds())

	c, err := testcluster.Up(ctx, testcluster.Options{Root: root, Log: os.Stderr})
	if err != nil {
		return e, err
	}
	e.cluster = c
	fmt.Printf("test/cluster: cluster up (%.1fs)\n", c.Up.Seconds())
	sum, err := fileSum(archive)
	if err != nil {
		return e, err
	}
	e.htcImage, e.htcTag = "haproxy-template/htc", "cluster-test-"+sum[:12]
	if _, err := c.Import(ctx, archive, e.htcImage+":"+e.htcTag); err != nil {
		return e, err
	}
	e.backend = "localhost/htc-test/backend:1"
	if _, err := c.Import(ctx, filepath.Join(images, "backend.oci.tar"), e.backend); err != nil {
		return e, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return e, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return e, err
	}
	return e, nil
}

// makeImage returns the archive `make image` built: HTC_IMAGE_ARCHIVE when
// make test or make cluster-test built it, else it runs make image with
// the archive in dir.
func makeImage(ctx context.Context, root, dir string) (string, error) {
	if a := os.Getenv("HTC_IMAGE_ARCHIVE"); a != "" {
		if _, err := os.Stat(a); err != nil {
			return "", fmt.Errorf("HTC_IMAGE_ARCHIVE: %w", err)
		}
		return a, nil
	}
	archive := filepath.Join(dir, "htc-image.oci.tar")
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "image", "IMAGE_ARCHIVE="+archive)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("make image: %w\n%s", err, out)
	}
	fmt.Printf("test/cluster: %s", out)
	return archive, nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// requireCluster fails the test when the cluster could not be set up.
func requireCluster(t *testing.T) *env {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("the test cluster could not be set up: %v", setupErr)
	}
	return setup
}
