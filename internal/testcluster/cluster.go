// Package testcluster gives tests the machine's single-node Kubernetes test
// cluster: kubelet, containerd and runc, kube-proxy and a real control
// plane, run by hack/cluster-up.sh from cached binaries (see the README's
// development section and notes/cluster.md). Pods really run: images are
// imported from OCI archives (no registry) and pulled with
// imagePullPolicy Never or IfNotPresent.
//
//	c, err := testcluster.Up(ctx, testcluster.Options{Root: root, Log: os.Stderr})
//	defer c.Down()
//	ref, err := c.Import(ctx, "bin/htc-image.oci.tar", "haproxy-template/htc:test")
//	out, err := c.Kubectl(ctx, "get", "nodes")
//
// There is one cluster per machine (the bridge, the CIDRs, the kubelet's
// ports and containerd's /run paths are machine-wide): Up takes the
// machine's cluster lock, waiting for another session to finish, and holds
// it until Down, which passes it to every script it runs. Up brings down
// whatever an earlier session left first; Down removes everything the
// cluster made and fails when something is left. A process that dies
// between the two leaves the cluster up; the next Up removes it.
//
// Test traffic goes only to loopback and to the cluster's own addresses:
// pods (10.244.0.0/16) and Services (10.96.0.0/16) on the bridge htc0, and
// the API server at 10.244.0.1:6443. Pods cannot send anything out of the
// machine and have no DNS.
package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Fixed names of the cluster (hack/cluster-lib.sh).
const (
	// LockFile is the machine's cluster lock.
	LockFile = "/run/lock/htc-cluster.lock"
	// ownerFile says who holds LockFile.
	ownerFile = "/run/lock/htc-cluster.owner"
	// PodCIDR holds the pods' addresses.
	PodCIDR = "10.244.0.0/16"
	// ServiceCIDR holds the Services' cluster IPs.
	ServiceCIDR = "10.96.0.0/16"
	// NodeName is the one node's name.
	NodeName = "htc-node"
)

// Options configure Up.
type Options struct {
	// Root is the repository (hack/ holds the scripts); empty: found from
	// the working directory upwards (go.mod).
	Root string
	// Log receives the scripts' progress (stderr); nil discards it.
	Log io.Writer
}

// Cluster is the running test cluster, held by this process until Down.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig (system:masters).
	Kubeconfig string
	// KubectlPath is kubectl v1.34.
	KubectlPath string
	// Up is how long Up took (the lock wait excluded).
	Up time.Duration

	root string
	log  io.Writer
	lock *os.File
}

// Up takes the cluster lock (waiting at most until ctx ends), runs
// hack/cluster-up.sh (which installs the apt packages and builds the
// binaries and images once, and brings down what an earlier session left)
// and returns the cluster. It fails with the script's message when this
// machine cannot run a cluster (not root, no apt-get).
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	root := opts.Root
	if root == "" {
		var err error
		if root, err = RepoRoot(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{root: root, log: opts.Log}
	if c.log == nil {
		c.log = io.Discard
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the test cluster needs root (kubelet, containerd, network namespaces, iptables): run the tests as root")
	}
	lock, err := takeLock(ctx, LockFile, ownerFile, c.log)
	if err != nil {
		return nil, err
	}
	c.lock = lock
	start := time.Now()
	out, err := c.Script(ctx, "cluster-up.sh")
	if err != nil {
		c.release()
		return nil, err
	}
	c.Up = time.Since(start)
	c.Kubeconfig = lastLine(out)
	env, err := os.ReadFile(filepath.Join(filepath.Dir(c.Kubeconfig), "env"))
	if err != nil {
		_ = c.Down()
		return nil, fmt.Errorf("cluster-up.sh: %w", err)
	}
	for _, l := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(l, "KUBECTL="); ok {
			c.KubectlPath = v
		}
	}
	if c.KubectlPath == "" {
		_ = c.Down()
		return nil, errors.New("cluster-up.sh wrote no KUBECTL")
	}
	return c, nil
}

// Down runs hack/cluster-down.sh (bounded by 5 minutes) and releases the
// lock. It fails when something of the cluster is left behind.
func (c *Cluster) Down() error {
	if c.lock == nil {
		return nil
	}
	defer c.release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := c.Script(ctx, "cluster-down.sh")
	return err
}

// Import imports the OCI archive into the cluster under name (normalized
// as the kubelet does; hack/cluster-import.sh) and returns the full
// reference.
func (c *Cluster) Import(ctx context.Context, archive, name string) (string, error) {
	out, err := c.Script(ctx, "cluster-import.sh", archive, name)
	if err != nil {
		return "", err
	}
	return lastLine(out), nil
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Script runs hack/NAME with the cluster lock passed to it
// (HTC_CLUSTER_LOCK_FD) and KUBECONFIG set; its stderr goes to the log.
// It returns stdout, or an error carrying the end of stderr.
func (c *Cluster) Script(ctx context.Context, name string, args ...string) (string, error) {
	if c.lock == nil {
		return "", errors.New("the cluster lock is not held")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "hack", name), args...)
	cmd.Dir = c.root
	cmd.ExtraFiles = []*os.File{c.lock} // fd 3
	cmd.Env = append(os.Environ(), "HTC_CLUSTER_LOCK_FD=3")
	if c.Kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+c.Kubeconfig)
	}
	var stdout bytes.Buffer
	tail := &tailBuffer{max: 4000}
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(c.log, tail)
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("hack/%s %s: %w\n%s", name, strings.Join(args, " "), err, tail.String())
	}
	return stdout.String(), nil
}

func (c *Cluster) release() {
	if c.lock != nil {
		_ = syscall.Flock(int(c.lock.Fd()), syscall.LOCK_UN)
		_ = c.lock.Close()
		c.lock = nil
	}
}

// takeLock locks the file lockFile, waiting until ctx ends, and writes
// this process into ownerFile; while it waits it tells log who holds it
// (ownerFile).
func takeLock(ctx context.Context, lockFile, ownerFile string, log io.Writer) (*os.File, error) {
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(filepath.Dir(lockFile), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the cluster lock: %w", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", lockFile, err)
		}
		owner, _ := os.ReadFile(ownerFile)
		if !told {
			fmt.Fprintf(log, "testcluster: waiting for the cluster lock %s, held by: %s\n", lockFile, strings.TrimSpace(string(owner)))
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("the cluster lock %s is held by %s: %w", lockFile, strings.TrimSpace(string(owner)), ctx.Err())
		case <-time.After(time.Second):
		}
	}
	exe, _ := os.Executable()
	_ = os.WriteFile(ownerFile, fmt.Appendf(nil, "pid %d (%s) since %s\n", os.Getpid(), filepath.Base(exe), time.Now().UTC().Format(time.RFC3339)), 0o644)
	return f, nil
}

// rootModule matches the module line of the repository's go.mod (not of a
// module nested in it, such as test/conformance's).
var rootModule = regexp.MustCompile(`(?m)^module github\.com/haproxy-template/htc\s*$`)

// RepoRoot is the directory of the repository's go.mod above the working
// directory (a nested module's go.mod is passed by).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && rootModule.Match(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// Images builds (once; cached by their inputs) the pause image the
// cluster runs and the test backend image (test/cluster/backend) with
// hack/cluster-images.sh, and returns the directory holding pause.oci.tar
// and backend.oci.tar.
func Images(ctx context.Context, root string, log io.Writer) (string, error) {
	out, err := runScript(ctx, root, log, "cluster-images.sh")
	return lastLine(out), err
}

// PackImage packs the directory dir into a one-layer OCI archive out with
// entrypoint (hack/oci-image.sh), for static binaries: a conformance
// suite's echo server, say. Import it with Cluster.Import under the name
// the pods' manifests use.
func PackImage(ctx context.Context, root string, log io.Writer, out, dir string, entrypoint ...string) error {
	_, err := runScript(ctx, root, log, "oci-image.sh", append([]string{out, dir}, entrypoint...)...)
	return err
}

// runScript runs hack/NAME (no lock needed) and returns its stdout.
func runScript(ctx context.Context, root string, log io.Writer, name string, args ...string) (string, error) {
	if log == nil {
		log = io.Discard
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", name), args...)
	cmd.Dir = root
	var stdout bytes.Buffer
	tail := &tailBuffer{max: 4000}
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(log, tail)
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("hack/%s: %w\n%s", name, err, tail.String())
	}
	return stdout.String(), nil
}
