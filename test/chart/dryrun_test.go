package chart

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const crdName = "haproxytemplateconfigs.haproxy-template.io"

// TestServerDryRun: a real kube-apiserver accepts every manifest of the chart
// (`helm template | kubectl apply --dry-run=server -f -`). The CRD is
// installed for real first, so the HAProxyTemplateConfig is validated against
// its schema. cert-manager's CRDs are not installed, so the cert-manager
// value set is not dry-run. The Prometheus Operator's CRDs are stood in for
// by ones that accept any field (testdata/monitoring-crds.yaml).
func TestServerDryRun(t *testing.T) {
	requireHelm(t)
	kc, kubectl := requireAPIServer(t)
	env := []string{"KUBECONFIG=" + kc}
	k := func(stdin []byte, args ...string) string {
		t.Helper()
		out, err := run(repoRoot, env, stdin, kubectl, args...)
		require.NoError(t, err)
		return out
	}
	// kubectl wait fails at once ("accessor error") when it reads a CRD
	// before the API server wrote its status: ask again until it passes.
	established := func(crds ...string) {
		t.Helper()
		args := append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)
		var err error
		for range 120 {
			if _, err = run(repoRoot, env, nil, kubectl, args...); err == nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		require.NoError(t, err, "CRDs not Established: %v", crds)
	}
	k(nil, "apply", "--server-side", "-f", filepath.Join(chartDir, "crds"))
	established("crd/" + crdName)
	k(nil, "apply", "--server-side", "-f", filepath.Join("test", "chart", "testdata", "monitoring-crds.yaml"))
	established("crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
	if _, err := run(repoRoot, env, nil, kubectl, "get", "namespace", releaseNS); err != nil {
		k(nil, "create", "namespace", releaseNS)
	}

	objLine := regexp.MustCompile(`(?m)^\S+ (created|configured|unchanged) \(server dry run\)$`)
	for _, vs := range valueSets {
		if vs.name == "cert-manager" {
			continue
		}
		t.Run(vs.name, func(t *testing.T) {
			manifest := render(t, vs.args...)
			n := len(docs(t, manifest))
			require.Greater(t, n, 5)
			out := k([]byte(manifest), "apply", "--dry-run=server", "-f", "-")
			got := objLine.FindAllString(out, -1)
			assert.Len(t, got, n, "every object is accepted:\n%s", out)
			for _, kind := range []string{"validatingwebhookconfiguration", "haproxytemplateconfig", "deployment", "networkpolicy", "clusterrole", "ingressclass"} {
				assert.Contains(t, out, kind+".", "output of the dry-run mentions a %s", kind)
			}
			assert.False(t, strings.Contains(out, "Warning"), "no warnings:\n%s", out)
		})
	}

	// The new values' variants are accepted too: tuned or disabled leader
	// election, no webhook, the template's optional fields.
	for name, args := range map[string][]string{
		"leader-election-tuned": {"--set", "leaderElection.leaseDuration=30s", "--set", "leaderElection.renewDeadline=20s", "--set", "leaderElection.retryPeriod=500ms"},
		"single-replica":        {"--set", "leaderElection.enabled=false", "--set", "replicas=1"},
		"no-webhook":            {"--set", "webhook.enabled=false"},
		"webhook-template":      {"--set", "webhook.caBundle=T1dO", "--set", "webhook.validateConfig=false", "--set", "webhook.namespaceSelector.matchLabels.team=a", "--set", "webhook.timeoutSeconds=30"},
	} {
		t.Run(name, func(t *testing.T) {
			manifest := render(t, args...)
			n := len(docs(t, manifest))
			out := k([]byte(manifest), "apply", "--dry-run=server", "-f", "-")
			assert.Len(t, objLine.FindAllString(out, -1), n, "every object is accepted:\n%s", out)
			assert.False(t, strings.Contains(out, "Warning"), "no warnings:\n%s", out)
		})
	}

	// The dry-run reaches the CRD's schema: a validation test without
	// assertions passes values.schema.json but the API server refuses it.
	t.Run("crd-schema-is-enforced", func(t *testing.T) {
		manifest := render(t, "--set", "config.validationTests.no-assertions.description=x")
		out, err := run(repoRoot, env, []byte(manifest), kubectl, "apply", "--dry-run=server", "-f", "-")
		require.Error(t, err, out)
		assert.Contains(t, err.Error(), "assertions")
	})
}
