package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCRDIsCurrent regenerates the CRD from the Go types and fails when the
// checked-in manifest under charts/htc/crds differs: run `make generate`.
func TestCRDIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	root := moduleRoot(t)
	out := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "crd:crdVersions=v1", "paths=./pkg/config/...", "output:crd:dir="+out)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "controller-gen: %s", b)

	const name = "haproxy-template.io_haproxytemplateconfigs.yaml"
	want, err := os.ReadFile(filepath.Join(out, name))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(root, "charts", "htc", "crds", name))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "charts/htc/crds/%s is stale: run `make generate`", name)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	return filepath.Dir(strings.TrimSpace(string(b)))
}
