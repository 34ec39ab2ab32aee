package testutil

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ModuleDir returns the directory of a module of the build list (go.mod) in
// the module cache, downloading it when it is missing, so tests can read
// files a module ships (CRDs, manifests) without copying them.
func ModuleDir(tb testing.TB, module string) string {
	tb.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	require.NoError(tb, err, "go mod download %s", module)
	dir := ""
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == `"Dir"` {
			dir = strings.Trim(strings.TrimSpace(v), `",`)
		}
	}
	require.NotEmpty(tb, dir, "go mod download -json %s: no Dir in %s", module, out)
	return dir
}

// GatewayAPICRDs returns the paths of the standard channel
// CustomResourceDefinitions of sigs.k8s.io/gateway-api (the version go.mod
// requires), sorted; the ValidatingAdmissionPolicy file beside them is left out.
func GatewayAPICRDs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(ModuleDir(tb, "sigs.k8s.io/gateway-api"), "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	require.NoError(tb, err)
	var crds []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "_vap_") {
			crds = append(crds, f)
		}
	}
	require.NotEmpty(tb, crds, "no CRDs in the gateway-api module")
	sort.Strings(crds)
	return crds
}
