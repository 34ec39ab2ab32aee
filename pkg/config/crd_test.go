package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
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

// TestCRDServesTheGoVersion guards the group, version and names the CRD
// serves against the constants the code uses (controller-gen takes the
// version from a marker, not from the constants).
func TestCRDServesTheGoVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "charts", "htc", "crds", "haproxy-template.io_haproxytemplateconfigs.yaml"))
	require.NoError(t, err)
	var crd struct {
		Spec struct {
			Group    string
			Names    struct{ Kind, Plural string }
			Scope    string
			Versions []struct {
				Name            string
				Served, Storage bool
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &crd))
	assert.Equal(t, config.Group, crd.Spec.Group)
	assert.Equal(t, config.Kind, crd.Spec.Names.Kind)
	assert.Equal(t, config.Resource, crd.Spec.Names.Plural)
	assert.Equal(t, "Namespaced", crd.Spec.Scope)
	require.Len(t, crd.Spec.Versions, 1)
	assert.Equal(t, config.Version, crd.Spec.Versions[0].Name)
	assert.True(t, crd.Spec.Versions[0].Served)
	assert.True(t, crd.Spec.Versions[0].Storage)
}
