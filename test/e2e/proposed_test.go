package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller"
)

// The proposed-config scenario runs its own controller for the config
// htc-judge/htc, watching only namespace judge (testutil.ProposalNamespace),
// and its own webhook for that config alone, so it shares the API server
// with the other e2e tests without judging or serving their objects.
const judgeConfigNS = "htc-judge"

// TestProposedConfigJudgedOverWhatItReads: the config webhook judges a
// proposed HAProxyTemplateConfig over the objects it will render once
// applied (issue 31), not over what the config in use keeps of them: a
// new data read, an annotation through default, a label through dig, a
// Service's status.loadBalancer, toJson of a whole object, a new indexBy,
// label selector or resource. Each reproduction is a false allow (the
// proposed config breaks over the objects) and a false deny (it needs a
// value the config in use does not keep); kubectl reads the verdict of a
// server-side dry run, which must be the full computation's (the cases'
// expectations, checked against a full render in pkg/admission).
func TestProposedConfigJudgedOverWhatItReads(t *testing.T) {
	root := env.root
	dir := t.TempDir()
	mustKubectl(t, installableCRD(t, root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	for _, ns := range []string{judgeConfigNS, testutil.ProposalNamespace} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	cases := testutil.ProposalCases()
	r, _ := eventually(t, 15*time.Second, succeeded, testutil.ProposalConfig(judgeConfigNS, "htc", cases[0].Live), "apply", "-f", "-")
	require.NoError(t, r.err, "applying the config:\n%s", r)
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", testutil.ProposalNamespace, "configmap/a", "service/s")
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", judgeConfigNS, "haproxytemplateconfig/htc")
	})

	c := generateCerts(t, dir)
	rc := startController(t, c, func(o *controller.Options) {
		o.ConfigNamespace = judgeConfigNS
		o.WatchNamespaces = []string{testutil.ProposalNamespace}
	})
	rc.waitReady(t, 60*time.Second)
	_, port, _ := strings.Cut(rc.webhookAddr, ":")
	mustKubectl(t, configWebhook("https://127.0.0.1:"+port+"/validate", c.caPEM), "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", "htc-judge", "--ignore-not-found")
	})
	// The API server picks the webhook up asynchronously: a config whose
	// template always fails is denied once it calls it.
	failing := testutil.ProposalConfig(judgeConfigNS, "htc", testutil.ProposalSpec(
		"cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name]}", `{{ fail "probe" }}`))
	r, _ = eventually(t, 20*time.Second, denied, failing, "apply", "--dry-run=server", "-f", "-")
	require.True(t, denied(r), "the config webhook never denied a failing config:\n%s", r)

	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			useConfig(t, rc, tc.Live)
			applyObjects(t, tc.Objects)
			r := kubectl(t, testutil.ProposalConfig(judgeConfigNS, "htc", tc.Proposed), "apply", "--dry-run=server", "-f", "-")
			t.Logf("kubectl: %s", strings.TrimSpace(r.stdout+r.stderr))
			if tc.Allowed {
				assert.NoError(t, r.err, "%s", r)
				return
			}
			require.True(t, denied(r), "%s", r)
			assert.Contains(t, r.stderr, "denied the request: the proposed configuration fails over the current resources in the "+tc.Phase+" phase")
		})
	}
}

// configWebhook is a ValidatingWebhookConfiguration htc-judge sending
// HAProxyTemplateConfigs of namespace judgeConfigNS to url.
func configWebhook(url string, caPEM []byte) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: htc-judge}
webhooks:
- name: haproxytemplateconfigs.validate.htc
  clientConfig: {url: %s, caBundle: %s}
  rules: [{apiGroups: [haproxy-template.io], apiVersions: [v1alpha1], resources: [haproxytemplateconfigs], operations: [CREATE, UPDATE]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: %d
  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [%s]}]}
`, url, base64.StdEncoding.EncodeToString(caPEM), webhookTimeoutSeconds, judgeConfigNS)
}

// useConfig makes spec the config in use and waits until the controller
// reports a live round of it (the Valid condition of its generation): the
// proposed configs are then judged against it.
func useConfig(t *testing.T, rc *runningController, spec string) {
	t.Helper()
	mustKubectl(t, testutil.ProposalConfig(judgeConfigNS, "htc", spec), "apply", "-f", "-")
	require.Eventually(t, func() bool {
		raw := kubectl(t, "", "get", "haproxytemplateconfig", "-n", judgeConfigNS, "htc", "-o", "json")
		var cfg config.HAProxyTemplateConfig
		if raw.err != nil || json.Unmarshal([]byte(raw.stdout), &cfg) != nil {
			return false
		}
		for _, c := range cfg.Status.Conditions {
			if c.Type == "Valid" && c.ObservedGeneration == cfg.Generation {
				return c.Status == "True"
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the controller never reported a valid live round of the config\n%s", tail(rc.logs.String(), 30))
}

// applyObjects makes the case's objects the cluster's (a Service's status
// through its status subresource); a Service the case has not is deleted.
func applyObjects(t *testing.T, docs []string) {
	t.Helper()
	hasService := false
	for _, d := range docs {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &obj))
		mustKubectl(t, d, "apply", "-f", "-")
		status, ok := obj["status"]
		if obj["kind"] == "Service" {
			hasService = true
		}
		if !ok {
			continue
		}
		patch, err := json.Marshal(map[string]any{"status": status})
		require.NoError(t, err)
		meta := obj["metadata"].(map[string]any)
		mustKubectl(t, "", "patch", strings.ToLower(obj["kind"].(string)), "-n", meta["namespace"].(string), meta["name"].(string),
			"--subresource=status", "--type=merge", "-p", string(patch))
	}
	if !hasService {
		mustKubectl(t, "", "delete", "--ignore-not-found", "-n", testutil.ProposalNamespace, "service/s")
	}
}
