// Package image tests the htc container image that `make image` builds
// (hack/image.sh): the OCI archive is unpacked here, without the tools that
// made it, and its binaries run from its root filesystem in a chroot as the
// image's user — `htc version`, `haproxy -v`, and `htc validate` of the
// minimal example, whose haproxy_valid assertions run the image's haproxy
// as that user with only /tmp writable.
//
// The image is built from a static htc built here with fixed metadata, so
// hack/image.sh's cache rebuilds it only when htc, the root filesystem or
// the recipe changed. When the package mirror is unreachable (no root
// filesystem can be built) the tests are skipped with a loud message; other
// missing prerequisites (not root) fail under CI=true and skip otherwise.
package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The metadata the test image is built with.
const (
	testVersion  = "0.0.0-imagetest"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
	testCreated  = "2025-01-02T03:04:05Z"
	testImage    = "haproxy-template/htc"
	testTag      = testVersion
	imageUID     = 65532
)

var (
	buildOnce sync.Once
	built     *image
	buildErr  error
	skipMsg   string // set when the image cannot be built on this machine
)

// image is an unpacked OCI archive.
type image struct {
	archive  string
	index    ociIndex
	manifest ociManifest
	config   ociConfig
	root     string // the unpacked root filesystem
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type ociIndex struct {
	SchemaVersion int          `json:"schemaVersion"`
	Manifests     []descriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations"`
}

type ociConfig struct {
	Created      string `json:"created"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string              `json:"User"`
		Env        []string            `json:"Env"`
		Entrypoint []string            `json:"Entrypoint"`
		Cmd        []string            `json:"Cmd"`
		WorkingDir string              `json:"WorkingDir"`
		Volumes    map[string]struct{} `json:"Volumes"`
		Labels     map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

// requireImage builds (hack/image.sh, cached) and unpacks the test image
// once per test binary.
func requireImage(t *testing.T) *image {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the image test builds and unpacks an image")
	}
	if os.Geteuid() != 0 {
		missing(t, "root (building the root filesystem and chroot)")
	}
	buildOnce.Do(func() { built, buildErr = buildImage(t) })
	if skipMsg != "" {
		fmt.Fprintln(os.Stderr, skipMsg)
		t.Skip(skipMsg)
	}
	require.NoError(t, buildErr)
	return built
}

// missing fails under CI=true and skips otherwise.
func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("the image test needs %s (CI=true, so this is a failure)", what)
	}
	t.Skipf("the image test needs %s; skipping (set CI=true to make this a failure)", what)
}

// unpackDir outlives the test that built the image: every test of the
// package uses it. TestMain removes it.
var unpackDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if unpackDir != "" {
		_ = os.RemoveAll(unpackDir)
	}
	os.Exit(code)
}

func buildImage(t *testing.T) (*image, error) {
	root := repoRoot(t)
	dir, err := os.MkdirTemp("", "htc-image-test-")
	if err != nil {
		return nil, err
	}
	unpackDir = dir

	bin := filepath.Join(dir, "htc")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion, "-o", bin, "./cmd/htc")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}

	archive := filepath.Join(dir, "htc.oci.tar")
	cmd := exec.Command(filepath.Join(root, "hack", "image.sh"), bin, archive)
	cmd.Env = append(os.Environ(), "IMAGE="+testImage, "TAG="+testTag, "VERSION="+testVersion,
		"REVISION="+testRevision, "CREATED="+testCreated)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			skipMsg = "\n########################################################################\n" +
				"## SKIPPING THE IMAGE TEST: THE PACKAGE MIRROR IS UNREACHABLE, so no\n" +
				"## Debian root filesystem with HAProxy 3.0 can be built on this machine.\n" +
				"########################################################################\n" + stderr.String()
			return nil, nil
		}
		return nil, fmt.Errorf("hack/image.sh: %v\n%s", err, stderr.String())
	}

	img := &image{archive: archive, root: filepath.Join(dir, "rootfs")}
	if err := img.unpack(); err != nil {
		return nil, err
	}
	// What a container runtime provides: /dev, of which Go's exec (stdin)
	// and HAProxy's workers need /dev/null, and /dev/shm, where HAProxy keeps
	// the startup logs that tell why a reload failed (shm_open).
	devNull := filepath.Join(img.root, "dev", "null")
	if err := os.MkdirAll(filepath.Join(img.root, "dev", "shm"), 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Join(img.root, "dev", "shm"), 0o1777); err != nil {
		return nil, err
	}
	if err := syscall.Mknod(devNull, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		return nil, fmt.Errorf("mknod /dev/null: %w", err)
	}
	if err := os.Chmod(devNull, 0o666); err != nil {
		return nil, err
	}
	return img, nil
}

// user, with the image's environment and working directory.
func (img *image) run(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	uid, gid := imageUser(t, img)
	cmd := &exec.Cmd{
		Path: argv[0],
		Args: argv,
		Env:  img.config.Config.Env,
		Dir:  img.config.Config.WorkingDir,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     img.root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		},
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// imageUser is the configured user, as numbers.
func imageUser(t *testing.T, img *image) (uint32, uint32) {
	t.Helper()
	var uid, gid uint32
	_, err := fmt.Sscanf(img.config.Config.User, "%d:%d", &uid, &gid)
	require.NoError(t, err, "the image's user %q is not UID:GID", img.config.Config.User)
	return uid, gid
}

func TestImageConfig(t *testing.T) {
	img := requireImage(t)
	c := img.config.Config

	assert.Equal(t, fmt.Sprintf("%d:%d", imageUID, imageUID), c.User, "a numeric non-root user (runAsNonRoot can verify it)")
	uid, _ := imageUser(t, img)
	assert.NotZero(t, uid, "not root")
	assert.Equal(t, []string{"/usr/local/bin/htc"}, c.Entrypoint)
	assert.Empty(t, c.Cmd)
	assert.Contains(t, c.Env, "TMPDIR=/tmp")
	assert.Contains(t, c.Volumes, "/tmp", "the one writable place is a declared volume")
	assert.Equal(t, testCreated, img.config.Created)
	assert.Equal(t, "linux", img.config.OS)
	assert.Len(t, img.manifest.Layers, 2, "the root filesystem and htc")
	assert.Len(t, img.config.RootFS.DiffIDs, len(img.manifest.Layers))

	want := map[string]string{
		"org.opencontainers.image.title":    "htc",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.created":  testCreated,
		"org.opencontainers.image.source":   "https://github.com/haproxy-template/htc",
		"org.opencontainers.image.url":      "https://github.com/haproxy-template/htc",
		"org.opencontainers.image.licenses": "NOASSERTION",
	}
	for k, v := range want {
		assert.Equal(t, v, c.Labels[k], "label %s", k)
		assert.Equal(t, v, img.manifest.Annotations[k], "manifest annotation %s", k)
	}
	assert.Regexp(t, `^3\.0\.\d+`, c.Labels["io.haproxy-template.htc.haproxy-version"])
	assert.Contains(t, c.Labels["org.opencontainers.image.description"], c.Labels["io.haproxy-template.htc.haproxy-version"])

	assert.Equal(t, testTag, img.index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
}

func TestImageRuns(t *testing.T) {
	img := requireImage(t)

	out, err := img.run(t, "/usr/local/bin/htc", "version")
	require.NoError(t, err, out)
	assert.Equal(t, "htc "+testVersion+"\n", out)

	out, err = img.run(t, "/usr/sbin/haproxy", "-v")
	require.NoError(t, err, out)
	first := strings.SplitN(out, "\n", 2)[0]
	assert.Regexp(t, `^HAProxy version 3\.0\.\d+`, first)
	assert.Contains(t, first, "version "+img.config.Config.Labels["io.haproxy-template.htc.haproxy-version"]+" ",
		"the label names the haproxy inside")

	// The tests' checker is this same HAProxy (make test puts it first in PATH).
	if host, err := exec.LookPath("haproxy"); err == nil {
		hostOut, err := exec.Command(host, "-v").Output()
		require.NoError(t, err)
		assert.Equal(t, first, strings.SplitN(string(hostOut), "\n", 2)[0],
			"the haproxy in PATH (%s) is not the image's: run the tests through make", host)
	}
}

// TestImageValidates runs the whole check path inside the image, as its
// user: the minimal example's embedded tests render and check with the
// image's haproxy (haproxy_valid), writing only under /tmp.
func TestImageValidates(t *testing.T) {
	img := requireImage(t)
	cfg, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "minimal", "config.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(img.root, "tmp", "config.yaml"), cfg, 0o644))

	out, err := img.run(t, "/usr/local/bin/htc", "validate", "-f", "/tmp/config.yaml")
	require.NoError(t, err, out)
	assert.Contains(t, out, "passed")

	// Nothing but Debian's sticky scratch directories is writable by the
	// image's user (with readOnlyRootFilesystem, only the /tmp volume).
	uid, _ := imageUser(t, img)
	var writable []string
	require.NoError(t, filepath.WalkDir(img.root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o002 != 0 || (st.Uid == uid && fi.Mode().Perm()&0o200 != 0) {
			rel, _ := filepath.Rel(img.root, p)
			writable = append(writable, "/"+rel)
		}
		return nil
	}))
	assert.ElementsMatch(t, []string{"/tmp", "/var/tmp", "/run/lock", "/dev/shm"}, writable,
		"directories the image's user can write (/dev/shm is the runtime's, made by the test)")
}

// TestImageDockerArchive converts the archive with skopeo, as the README
// tells kind/k3d/minikube users to, and checks the tag and labels a
// containers/image reader sees.
func TestImageDockerArchive(t *testing.T) {
	img := requireImage(t)
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		missing(t, "skopeo (apt-get install skopeo)")
	}
	out, err := exec.Command(skopeo, "inspect", "--config", "oci-archive:"+img.archive).Output()
	require.NoError(t, err)
	var cfg ociConfig
	require.NoError(t, json.Unmarshal(out, &cfg))
	assert.Equal(t, img.config.Config.Labels, cfg.Config.Labels)
	assert.Equal(t, img.config.Config.User, cfg.Config.User)

	docker := filepath.Join(t.TempDir(), "htc.docker.tar")
	ref := testImage + ":" + testTag
	out, err = exec.Command(skopeo, "copy", "--quiet", "oci-archive:"+img.archive, "docker-archive:"+docker+":"+ref).CombinedOutput()
	require.NoError(t, err, string(out))
	f, err := os.Open(docker)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		hdr, err := tr.Next()
		require.NoError(t, err, "manifest.json not found in the docker archive")
		if hdr.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		require.NoError(t, json.NewDecoder(tr).Decode(&m))
		require.Len(t, m, 1)
		require.Len(t, m[0].RepoTags, 1)
		assert.True(t, m[0].RepoTags[0] == ref || strings.HasSuffix(m[0].RepoTags[0], "/"+ref),
			"the docker archive is tagged %s (possibly with the default registry in front): %v", ref, m[0].RepoTags)
		return
	}
}
