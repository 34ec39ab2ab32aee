// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, the version in go.mod) against htc
// in the machine's real single-node test cluster (internal/testcluster),
// GATEWAY-HTTP, GATEWAY-GRPC, GATEWAY-TLS and GATEWAY-TCP profiles, and writes the suite's own YAML report to
// docs/conformance/ (see docs/conformance/README.md).
//
// `make test` runs it (2-5 minutes), like test/cluster and under the same
// machine-wide lock; -short runs only this package's tests that need no
// cluster. It needs root, like test/cluster. `make conformance` runs it
// alone and keeps its report in docs/conformance/ (HTC_CONFORMANCE_REPORT=1).
//
// The deployment: the chart with the Gateway library
// (charts/htc/values-gateway.yaml) and values.yaml beside this file: one
// replica, HAProxy in the node's network namespace (haproxy.hostNetwork)
// binding one loopback address per Gateway (extraContext.addressPool) at the
// listener ports as written (portOffset 0), so the suite, which connects to a
// Gateway's status.addresses[0] and listener port, reaches HAProxy over
// loopback only. Binding ports 80 and 443 needs NET_BIND_SERVICE: the haproxy
// container runs as root with that one capability (values.yaml says why).
// The suite's echo-basic backend (HTTP, gRPC, TLS and TCP echo servers) is
// built from the source of its module (echoBasicPackage) and imported under
// every image name the suite's manifests use.
package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-template/htc/internal/testcluster"
)

const (
	release = "htc"
	ns      = "htc-system"
	// gatewayClass is the GatewayClass the suite runs against.
	gatewayClass = "htc"
	// controllerName is the Gateway library's extraContext.controllerName
	// (charts/htc/values-gateway.yaml).
	controllerName = "haproxy-template.io/htc"
)

// env is what TestMain set up.
type env struct {
	root    string
	cluster *testcluster.Cluster
	helm    string
	// baseManifests is the suite's base manifests without the documents
	// that need images this run does not provide (see images_test.go).
	baseManifests []byte
	setupTime     time.Duration
	// htcRepo and htcTag name the imported htc image.
	htcRepo, htcTag string
}

var (
	setup    *env
	setupErr error
)

// errShort is setupErr when the suite is not to run (-short).
var errShort = errors.New("-short: the suite needs the test cluster (make test or make conformance; root)")

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Only the tests that need no cluster run.
		setupErr = errShort
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	e, helmHome, err := prepare(ctx)
	if helmHome != "" {
		defer os.RemoveAll(helmHome)
	}
	if e != nil && e.cluster != nil {
		defer func() {
			t := time.Now()
			if err := e.cluster.Down(); err != nil {
				fmt.Fprintln(os.Stderr, "test/conformance: FAIL: cluster-down.sh:", err)
				os.Exit(1)
			}
			fmt.Printf("test/conformance: cluster down (%.1fs); whole package %.1fs\n", time.Since(t).Seconds(), time.Since(start).Seconds())
		}()
	}
	if e != nil {
		e.setupTime = time.Since(start)
	}
	setup, setupErr = e, err
	return m.Run()
}

// prepare builds the images, starts the cluster and imports the images.
func prepare(ctx context.Context) (*env, string, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return nil, "", err
	}
	e := &env{root: root}
	helmOut, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		return e, "", fmt.Errorf("hack/helm.sh: %w", err)
	}
	e.helm = lastLine(string(helmOut))
	helmHome, err := os.MkdirTemp("", "htc-conformance-")
	if err != nil {
		return e, "", err
	}
	for _, k := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		os.Setenv(k, filepath.Join(helmHome, strings.ToLower(k)))
	}
	archive := os.Getenv("HTC_IMAGE_ARCHIVE")
	if archive == "" {
		return e, helmHome, fmt.Errorf("HTC_IMAGE_ARCHIVE is not set: run `make conformance` (it builds the image)")
	}
	echoArchive, err := buildEchoBasic(ctx, root, helmHome)
	if err != nil {
		return e, helmHome, err
	}
	echoNames, others, err := suiteImages()
	if err != nil {
		return e, helmHome, err
	}
	if e.baseManifests, err = baseManifestsWithout(others); err != nil {
		return e, helmHome, err
	}
	if _, err := testcluster.Images(ctx, root, os.Stderr); err != nil { // the pause image cluster-up needs
		return e, helmHome, err
	}

	c, err := testcluster.Up(ctx, testcluster.Options{Root: root, Log: os.Stderr})
	if err != nil {
		return e, helmHome, err
	}
	e.cluster = c
	fmt.Printf("test/conformance: cluster up (%.1fs)\n", c.Up.Seconds())
	sum, err := fileSum(archive)
	if err != nil {
		return e, helmHome, err
	}
	e.htcRepo, e.htcTag = "haproxy-template/htc", "conformance-"+sum[:12]
	if _, err := c.Import(ctx, archive, e.htcRepo+":"+e.htcTag); err != nil {
		return e, helmHome, err
	}
	for _, name := range echoNames {
		if _, err := c.Import(ctx, echoArchive, name); err != nil {
			return e, helmHome, err
		}
	}
	fmt.Printf("test/conformance: echo-basic (built from the module) imported as %d image names; not provided: %v\n", len(echoNames), others)

	return e, helmHome, nil
}

// echoBasicPackage is the suite's backend: since gateway-api v1.7 it lives in
// the module sigs.k8s.io/gateway-api-conformance-images (the conformance
// module requires it; this package's go.mod pins the version the module
// proxy serves), and conformance/echo-basic holds only a README.
const echoBasicPackage = "sigs.k8s.io/gateway-api-conformance-images/echo-basic"

// buildEchoBasic builds echoBasicPackage as a static binary and packs it
// into an OCI archive in dir.
func buildEchoBasic(ctx context.Context, root, dir string) (string, error) {
	rootfs := filepath.Join(dir, "echo-rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(rootfs, "echo-basic"),
		echoBasicPackage)
	cmd.Dir = filepath.Join(root, "test", "conformance") // this module, whose build list holds it
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building echo-basic: %w\n%s", err, out)
	}
	archive := filepath.Join(dir, "echo-basic.oci.tar")
	if err := testcluster.PackImage(ctx, root, os.Stderr, archive, rootfs, "/echo-basic"); err != nil {
		return "", err
	}
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
