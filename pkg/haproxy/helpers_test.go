package haproxy

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// realHAProxy returns the haproxy binary for integration tests: the first in
// PATH (make test puts the image's HAProxy 3.0 there), else the Debian
// package's /usr/sbin/haproxy. It skips the test when haproxy is absent,
// unless CI is set: there a missing haproxy fails the test.
func realHAProxy(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("haproxy is not installed (apt-get install haproxy); required when CI is set")
	}
	tb.Skip("haproxy is not installed; integration test skipped (set CI=true to make this a failure)")
	return ""
}

// newTestWorkspace creates a workspace removed when the test ends.
func newTestWorkspace(tb testing.TB) *Workspace {
	tb.Helper()
	ws, err := NewWorkspace(tb.TempDir())
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = ws.Remove() })
	return ws
}

// bundleFor builds a bundle rendered for dir: "{{dir}}" in the config and
// in file contents stands for dir.
func bundleFor(dir, cfg string, maps, files map[string]string) *bundle.Bundle {
	sub := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = strings.ReplaceAll(v, "{{dir}}", dir)
		}
		return out
	}
	return &bundle.Bundle{
		BaseDir: dir,
		Config:  strings.ReplaceAll(cfg, "{{dir}}", dir),
		Maps:    sub(maps),
		Files:   sub(files),
	}
}

// testConfig is a small valid configuration with a host map; extra lines
// are appended at the end (line 17 on).
func testConfig(extra string) string {
	return `global
    log stdout format raw local0
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:18080
    use_backend %[req.hdr(host),lower,map({{dir}}/maps/host.map)]
    default_backend be0
backend be0
    server s1 127.0.0.1:8081
    server s2 127.0.0.1:8082
    server s3 127.0.0.1:8083
` + extra
}

// testMaps are the maps testConfig references.
func testMaps() map[string]string {
	return map[string]string{"host.map": "example.com be0\n"}
}

// processAlive reports whether pid is a live (non-zombie) process.
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// testBase is the directory test bundles are rendered for.
const testBase = "/work/htc-bundle"

// testVersion is the HAProxy version conditions are evaluated against.
const testVersion = "3.0.11-1+deb13u5"

// takeRuns returns what a fake haproxy wrote down in path, one word per
// run ("full", "stub"), space-separated ("" when it wrote nothing), and
// empties it for the next.
func takeRuns(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	_ = os.Remove(path)
	return strings.Join(strings.Fields(string(b)), " ")
}
