package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modulePath is this module's path, as users give it to go install.
const modulePath = "github.com/haproxy-template/htc"

// TestGoInstallPrintsModuleVersion: a binary built by `go install
// <module>/cmd/htc@<version>` (no ldflags) says that version in `htc
// version`. The module is served at a made-up version from a file:// module
// proxy holding this checkout (its tracked and unignored files); every
// dependency comes from the local module download cache, so no network is
// used. Skipped with -short: it builds htc once more (with -trimpath, whose
// compiled packages the build cache shares with make image).
func TestGoInstallPrintsModuleVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds htc with go install; skipped with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	const ver = "v0.99.0"
	download := strings.TrimSpace(goEnv(t, goBin, "GOMODCACHE")) + "/cache/download"
	proxy := t.TempDir()
	writeModuleProxy(t, proxy, ver)
	tmp := t.TempDir()
	cmd := exec.Command(goBin, "install", modulePath+"/cmd/htc@"+ver)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+proxy+",file://"+download, "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+filepath.Join(tmp, "mod"), "GOBIN="+filepath.Join(tmp, "bin"),
		"GOFLAGS=-modcacherw -trimpath", "CGO_ENABLED=0", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go install:\n%s", out)
	out, err = exec.Command(filepath.Join(tmp, "bin", "htc"), "version").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "htc "+ver+"\n", string(out))
}

// goEnv returns `go env NAME`.
func goEnv(t *testing.T, goBin, name string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", name).Output()
	require.NoError(t, err)
	return string(out)
}

// writeModuleProxy lays this checkout out as version ver of modulePath in
// the file:// proxy directory dir (the GOPROXY protocol: @v/list,
// @v/VER.info, .mod and .zip).
func writeModuleProxy(t *testing.T, dir, ver string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	v := filepath.Join(dir, modulePath, "@v")
	require.NoError(t, os.MkdirAll(v, 0o755))
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(v, "list"), []byte(ver+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(v, ver+".info"), []byte(fmt.Sprintf(`{"Version":%q,"Time":"2025-01-01T00:00:00Z"}`, ver)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(v, ver+".mod"), mod, 0o644))
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v)", err)
	}
	names := strings.Split(strings.TrimRight(string(list), "\x00"), "\x00")
	// A directory with a go.mod of its own is another module: the go
	// command leaves it out of the module's zip.
	var nested []string
	for _, name := range names {
		if dir, base := filepath.Split(name); base == "go.mod" && dir != "" {
			nested = append(nested, dir)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		st, err := os.Lstat(filepath.Join(root, name))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a symbolic link
		}
		if slices.ContainsFunc(nested, func(dir string) bool { return strings.HasPrefix(name, dir) }) {
			continue
		}
		w, err := zw.Create(modulePath + "@" + ver + "/" + name)
		require.NoError(t, err)
		f, err := os.Open(filepath.Join(root, name))
		require.NoError(t, err)
		_, err = io.Copy(w, f)
		f.Close()
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(v, ver+".zip"), buf.Bytes(), 0o644))
}
