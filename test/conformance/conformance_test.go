package conformance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	gwconformance "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"
)

// ReportFile is where the suite's report of a full run is written
// (relative to the repository).
const ReportFile = "docs/conformance/htc-gateway-http-report.yaml"

// valuesFile is the conformance install's values; its
// config.extraContext.supportedFeatures is what the Gateway library declares
// in the GatewayClass's status.supportedFeatures, where the suite reads the
// features to test.
const valuesFile = "test/conformance/values.yaml"

// declaredFeatures reads config.extraContext.supportedFeatures of valuesFile.
func declaredFeatures(root string) ([]features.FeatureName, error) {
	b, err := os.ReadFile(filepath.Join(root, valuesFile))
	if err != nil {
		return nil, err
	}
	var v struct {
		Config struct {
			ExtraContext struct {
				SupportedFeatures []features.FeatureName `json:"supportedFeatures"`
			} `json:"extraContext"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", valuesFile, err)
	}
	return v.Config.ExtraContext.SupportedFeatures, nil
}

// timeouts: the suite's defaults wait up to 3 minutes for a condition, so
// a test of something htc does not report takes minutes to fail. htc
// renders, checks and reloads within seconds of a change: these bounds
// are still generous for that on a loaded 2-core machine.
func timeouts() config.TimeoutConfig {
	c := config.DefaultTimeoutConfig()
	c.GatewayMustHaveAddress = 60 * time.Second
	c.GatewayMustHaveCondition = 60 * time.Second
	c.GWCMustBeAccepted = 60 * time.Second
	c.GatewayStatusMustHaveListeners = 30 * time.Second
	c.GatewayListenersMustHaveConditions = 30 * time.Second
	c.HTTPRouteMustHaveCondition = 30 * time.Second
	c.HTTPRouteMustNotHaveParents = 30 * time.Second
	c.RouteMustHaveParents = 30 * time.Second
	c.LatestObservedGenerationSet = 30 * time.Second
	c.NamespacesMustBeReady = 180 * time.Second
	c.MaxTimeToConsistency = 30 * time.Second
	c.DefaultTestTimeout = 60 * time.Second
	// v1.7's cleanup waits for each deleted object to be gone: a namespace
	// goes only once its pods have stopped, which on a loaded 2-core
	// machine takes longer than the default 30 s.
	c.DeleteTimeout = 180 * time.Second
	return c
}

// profiles are the conformance profiles the suite runs (one report, a
// section per profile): UDP is left out, HAProxy does not proxy it.
var profiles = []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName,
	suite.GatewayTLSConformanceProfileName, suite.GatewayTCPConformanceProfileName}

// serialTests are tests the suite marks parallel that this run runs alone
// (before the parallel ones), and why.
var serialTests = map[string]string{
	// Its ReferenceGrant lets every Gateway of gateway-conformance-infra use
	// the Secrets of gateway-conformance-web-backend, among them the one
	// GatewaySecretInvalidReferenceGrant (parallel too) expects refused:
	// running at once, the second fails on any implementation that reads
	// ReferenceGrants as the spec says.
	"ListenerSetReferenceGrant": "its ReferenceGrant would resolve GatewaySecretInvalidReferenceGrant's Gateway",
}

// conformanceTests is the suite's tests with serialTests not parallel.
func conformanceTests() []suite.ConformanceTest {
	out := slices.Clone(tests.ConformanceTests)
	for i := range out {
		if _, ok := serialTests[out[i].ShortName]; ok {
			out[i].Parallel = false
		}
	}
	return out
}

// TestGatewayAPI runs the suite's profiles (profiles). Every test the
// suite runs is a subtest (TestGatewayAPI/<ShortName>); a failing one
// fails this test. HTC_CONFORMANCE_RUN=regexp runs only the tests whose
// short name matches (the others are reported skipped);
// HTC_CONFORMANCE_FEATURES=a,b claims more features. The report is written
// to ReportFile only after a full run of the declared features with
// HTC_CONFORMANCE_REPORT=1 (make conformance), else to a temporary file.
func TestGatewayAPI(t *testing.T) {
	if errors.Is(setupErr, errShort) {
		t.Skip(setupErr)
	}
	if setupErr != nil {
		t.Fatalf("the test cluster could not be set up: %v", setupErr)
	}
	e := setup
	start := time.Now()
	e.install(t)
	t.Logf("setup (images, cluster, imports) %.1fs, install %.1fs", e.setupTime.Seconds(), time.Since(start).Seconds())

	log.SetLogger(zap.New(zap.WriteTo(os.Stdout), zap.UseDevMode(true)))
	cfg, err := clientcmd.BuildConfigFromFlags("", e.cluster.Kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	for _, install := range []func(*runtime.Scheme) error{v1alpha3.Install, v1alpha2.Install, xv1alpha1.Install, gwv1.Install, apiextensionsv1.AddToScheme} {
		require.NoError(t, install(c.Scheme()))
	}
	cs, err := clientset.NewForConfig(cfg)
	require.NoError(t, err)

	var skip []string
	// The features tested are those the GatewayClass's status declares
	// (config.extraContext.supportedFeatures of valuesFile), unless
	// HTC_CONFORMANCE_FEATURES=a,b claims more to try them: then these and
	// the declared ones (and the report is not kept).
	var feats []features.FeatureName
	extra := os.Getenv("HTC_CONFORMANCE_FEATURES")
	if extra != "" {
		feats, err = declaredFeatures(e.root)
		require.NoError(t, err)
		for _, f := range strings.Split(extra, ",") {
			if f = strings.TrimSpace(f); f != "" {
				feats = append(feats, features.FeatureName(f))
			}
		}
	}
	run := os.Getenv("HTC_CONFORMANCE_RUN")
	if run != "" {
		re, err := regexp.Compile(run)
		require.NoError(t, err, "HTC_CONFORMANCE_RUN")
		for _, ct := range tests.ConformanceTests {
			if !re.MatchString(ct.ShortName) {
				skip = append(skip, ct.ShortName)
			}
		}
	}

	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClass,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			SupportedFeatures:    feats,
			ConformanceProfiles:  profiles,
			TimeoutConfig:        timeouts(),
			// GatewayStaticAddresses: an address of the library's
			// extraContext.staticAddresses (values.yaml), bound on the
			// node's loopback, and one outside them, which the library
			// reports AddressNotUsable without binding it or sending to it.
			UsableNetworkAddresses:   []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: "127.12.0.1"}},
			UnusableNetworkAddresses: []gwv1.GatewaySpecAddress{{Type: new(gwv1.IPAddressType), Value: "192.0.2.1"}},
			SkipTests:                skip,
			Mode:                     "default",
			Implementation: confv1.Implementation{
				Organization: "haproxy-template",
				Project:      "htc",
				URL:          "https://github.com/haproxy-template/htc",
				Version:      e.version(),
				Contact:      []string{"@haproxy-template/htc-maintainers"},
			},
		},
		Client:        c,
		Clientset:     cs,
		RestConfig:    cfg,
		BaseManifests: "htc/" + baseManifestsPath,
		ManifestFS: []fs.FS{
			fstest.MapFS{"htc/" + baseManifestsPath: {Data: e.baseManifests}},
			&gwconformance.Manifests,
		},
	}
	cSuite, err := suite.NewConformanceTestSuite(opts)
	require.NoError(t, err)
	// The suite reports only once Run's cleanup ended its run: registered
	// before Run, this cleanup runs after that one.
	keep := os.Getenv("HTC_CONFORMANCE_REPORT") == "1" && run == "" && extra == ""
	t.Cleanup(func() { e.writeReport(t, cSuite, keep) })
	runStart := time.Now()
	all := conformanceTests()
	cSuite.Setup(t, all)
	require.NoError(t, cSuite.Run(t, all))
	t.Logf("the suite ran in %.1fs", time.Since(runStart).Seconds())
}

// writeReport writes the suite's report: to ReportFile when keep is set,
// else to a temporary file; and prints a summary.
func (e *env) writeReport(t *testing.T, cSuite *suite.ConformanceTestSuite, keep bool) {
	report, err := cSuite.Report()
	require.NoError(t, err)
	out, err := yaml.Marshal(report)
	require.NoError(t, err)
	path := filepath.Join(e.root, ReportFile)
	if !keep {
		path = filepath.Join(os.TempDir(), "htc-conformance-report.yaml")
		t.Logf("the report is not written to %s (only by a full run with HTC_CONFORMANCE_REPORT=1: make conformance without RUN or FEATURES)", ReportFile)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, out, 0o644))
	fmt.Printf("test/conformance: the suite's report (%s):\n%s", path, out)
	summarize(report)
}

// summarize prints each profile's core and extended results, one line each.
func summarize(r *confv1.ConformanceReport) {
	for _, p := range r.ProfileReports {
		fmt.Printf("test/conformance: %s core: %s, %d passed, %d failed, %d skipped; failed: %v\n", p.Name, p.Core.Result,
			p.Core.Statistics.Passed, p.Core.Statistics.Failed, p.Core.Statistics.Skipped, p.Core.FailedTests)
		if x := p.Extended; x != nil {
			fmt.Printf("test/conformance: %s extended: %s, %d passed, %d failed, %d skipped; failed: %v; features supported %v\n", p.Name, x.Result,
				x.Statistics.Passed, x.Statistics.Failed, x.Statistics.Skipped, x.FailedTests, x.SupportedFeatures)
		}
	}
}

// version is git describe of the repository, or "dev".
func (e *env) version() string {
	out, err := exec.Command("git", "-C", e.root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "dev"
	}
	return strings.TrimSpace(string(out))
}
