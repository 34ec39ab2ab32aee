package conformance

import (
	"io/fs"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gwconformance "sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/haproxy-template/htc/internal/testcluster"
)

// TestSuiteImagesNameEveryEchoBasicImage: every image of the base
// manifests' backends is among the echo-basic names imported, and no
// echo-basic image is left among the others.
func TestSuiteImagesNameEveryEchoBasicImage(t *testing.T) {
	echo, others, err := suiteImages()
	require.NoError(t, err)
	require.NotEmpty(t, echo)
	for _, name := range echo {
		assert.Contains(t, name, "/echo-basic", name)
	}
	for _, name := range others {
		assert.NotContains(t, name, "/echo-basic:", "%s is an echo-basic image but not imported", name)
	}
	base, err := fs.ReadFile(gwconformance.Manifests, baseManifestsPath)
	require.NoError(t, err)
	found := 0
	for _, m := range imageLine.FindAllStringSubmatch(string(base), -1) {
		if strings.Contains(m[1], "/echo-basic") {
			found++
			assert.Contains(t, echo, m[1], "an image of the base manifests")
		}
	}
	assert.NotZero(t, found, "the base manifests run echo-basic")
}

// TestBaseManifestsWithoutLeavesOutOnlyTheirDocuments: the documents that
// run one of the images are left out, every other document is kept as it
// is (every Gateway, Service and echo-basic Deployment).
func TestBaseManifestsWithoutLeavesOutOnlyTheirDocuments(t *testing.T) {
	orig, err := fs.ReadFile(gwconformance.Manifests, baseManifestsPath)
	require.NoError(t, err)
	same, err := baseManifestsWithout(nil)
	require.NoError(t, err)
	assert.Equal(t, string(orig), string(same), "nothing to leave out")

	_, others, err := suiteImages()
	require.NoError(t, err)
	got, err := baseManifestsWithout(others)
	require.NoError(t, err)
	origDocs, gotDocs := strings.Split(string(orig), "\n---\n"), strings.Split(string(got), "\n---\n")
	dropped := 0
	for _, doc := range origDocs {
		uses := false
		for _, m := range imageLine.FindAllStringSubmatch(doc, -1) {
			for _, o := range others {
				uses = uses || m[1] == o
			}
		}
		if uses {
			dropped++
			assert.NotContains(t, gotDocs, doc, "a document running an image not provided")
		} else {
			assert.Contains(t, gotDocs, doc, "a document kept as it is")
		}
	}
	assert.Equal(t, len(origDocs)-dropped, len(gotDocs))
	assert.Equal(t, strings.Count(string(orig), "\nkind: Gateway\n"), strings.Count(string(got), "\nkind: Gateway\n"), "every Gateway kept")
}

// TestValuesDeclareKnownFeatures: the features the conformance install
// declares are Gateway API feature names, once each, with the profile's core
// features among them.
func TestValuesDeclareKnownFeatures(t *testing.T) {
	root, err := testcluster.RepoRoot()
	require.NoError(t, err)
	declared, err := declaredFeatures(root)
	require.NoError(t, err)
	known := features.SetsToNamesSet(features.AllFeatures)
	seen := map[features.FeatureName]bool{}
	for _, f := range declared {
		assert.True(t, known.Has(f), "%s is not a Gateway API feature", f)
		assert.False(t, seen[f], "%s declared twice", f)
		seen[f] = true
	}
	for _, f := range []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportReferenceGrant,
		features.SupportGRPCRoute, features.SupportTLSRoute, features.SupportTCPRoute} {
		assert.True(t, seen[f], "the core feature %s", f)
	}
}

// TestEchoBasicPackageIsAMainPackageOfTheModuleGraph: the backend the run
// builds resolves in this module's graph as a command (gateway-api moved
// it out of its conformance module once; the build would fail only after
// the image and cluster work).
func TestEchoBasicPackageIsAMainPackageOfTheModuleGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.Name}}", echoBasicPackage)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "main", strings.TrimSpace(string(out)))
}

// TestSerialTestsAreParallelTestsOfTheSuite: each test serialTests names is
// one the suite runs in parallel, and conformanceTests runs it alone (a
// name the suite renames would otherwise run in parallel again, silently).
func TestSerialTestsAreParallelTestsOfTheSuite(t *testing.T) {
	parallel := map[string]bool{}
	for _, ct := range tests.ConformanceTests {
		parallel[ct.ShortName] = ct.Parallel
	}
	for name := range serialTests {
		assert.True(t, parallel[name], "%s is not a parallel test of the suite", name)
	}
	for _, ct := range conformanceTests() {
		if _, ok := serialTests[ct.ShortName]; ok {
			assert.False(t, ct.Parallel, ct.ShortName)
		}
	}
}
