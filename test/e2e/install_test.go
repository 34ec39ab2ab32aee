package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/controller"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// installFixture is a config namespace with the example config, an empty
// ValidatingWebhookConfiguration as the chart creates it (named like the
// namespace, its webhook template pointing at url) and a Deployment object
// standing for the controller's (no pod runs: the test apiserver has no
// scheduler; the replicas it wants decide whether a stopping controller
// removes the webhooks).
type installFixture struct {
	ns, url, addr string
}

// setUpInstall creates the fixture; everything goes with the test.
func setUpInstall(t *testing.T, ns, failurePolicy string) installFixture {
	t.Helper()
	addr := freeAddr(t)
	f := installFixture{ns: ns, addr: addr, url: "https://" + addr + "/validate"}
	mustKubectl(t, installableCRD(t, env.root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	r, _ := eventually(t, 15*time.Second, succeeded, configIn(t, ns, 8080), "apply", "-f", "-")
	require.NoError(t, r.err, "applying the config:\n%s", r)

	tmpl, err := json.Marshal(map[string]any{
		"clientConfig":   map[string]any{"url": f.url},
		"failurePolicy":  failurePolicy,
		"timeoutSeconds": webhookTimeoutSeconds,
		"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{
			"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []string{"kube-system"},
		}}},
		"validateConfig": true,
	})
	require.NoError(t, err)
	vwc, err := yaml.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": ns, "annotations": map[string]string{webhook.TemplateAnnotation: string(tmpl)}},
	})
	require.NoError(t, err)
	mustKubectl(t, string(vwc), "apply", "-f", "-")
	mustKubectl(t, deployment(ns, 2), "apply", "-f", "-")
	// Cleanups run last-in first-out: the controllers (started later) stop
	// first, then these go.
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", ns, "--ignore-not-found")
		cleanupKubectl(t, "delete", "-n", ns, "haproxytemplateconfig/htc", "deployment/htc", "lease/"+controller.LeaseName("htc"), "--ignore-not-found")
	})
	return f
}

// configIn is the example config in namespace ns, its frontend on httpPort.
func configIn(t *testing.T, ns string, httpPort int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.root, configFile))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	cfg["metadata"].(map[string]any)["namespace"] = ns
	cfg["spec"].(map[string]any)["extraContext"].(map[string]any)["httpPort"] = httpPort
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return string(out)
}

// deployment is a Deployment htc in ns that wants replicas pods.
func deployment(ns string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: htc, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: htc-e2e}}
  template:
    metadata: {labels: {app: htc-e2e}}
    spec:
      containers: [{name: controller, image: htc:e2e}]
`, ns, replicas)
}

// registered returns the webhooks of the fixture's configuration.
func (f installFixture) registered(t *testing.T) ([]admissionregistrationv1.ValidatingWebhook, error) {
	t.Helper()
	r := kubectl(t, "", "get", "validatingwebhookconfiguration", f.ns, "-o", "json")
	if r.err != nil {
		return nil, fmt.Errorf("%s", r)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := json.Unmarshal([]byte(r.stdout), &vwc); err != nil {
		return nil, fmt.Errorf("decoding the configuration: %w", err)
	}
	return vwc.Webhooks, nil
}

// waitRegistered waits until the configuration has webhooks (want) or none.
func (f installFixture) waitRegistered(t *testing.T, rc *runningController, want bool) []admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	var hooks []admissionregistrationv1.ValidatingWebhook
	var err error
	require.Eventually(t, func() bool {
		hooks, err = f.registered(t)
		return err == nil && (len(hooks) > 0) == want
	}, 60*time.Second, 100*time.Millisecond, "webhooks registered %v; last: %v %v\n%s", want, hooks, err, logsOf(rc))
	return hooks
}

func logsOf(rc *runningController) string {
	if rc == nil {
		return ""
	}
	return tail(rc.logs.String(), 40)
}

// Writes the webhooks would see in namespace default: an Ingress whose
// backend Service does not exist (the example library denies it) and a
// Service. Server-side dry runs: admission runs, nothing is stored.
var (
	badIngress = ingress("install-bad", "does-not-exist")
	aService   = "apiVersion: v1\nkind: Service\nmetadata: {name: install-svc, namespace: default}\nspec:\n  ports: [{port: 80}]\n"
)

func dryRun(t *testing.T, manifest string) kubectlResult {
	t.Helper()
	return kubectl(t, manifest, "apply", "--dry-run=server", "-f", "-")
}

// waitWritesAdmitted waits until the bad Ingress and the Service are admitted
// (the API server picks a changed ValidatingWebhookConfiguration up
// asynchronously).
func waitWritesAdmitted(t *testing.T, rc *runningController, why string) {
	t.Helper()
	for _, m := range []string{badIngress, aService} {
		r, n := eventually(t, 30*time.Second, succeeded, m, "apply", "--dry-run=server", "-f", "-")
		require.NoError(t, r.err, "%s: a write in namespace default is refused (%d attempts):\n%s\n%s", why, n, r, logsOf(rc))
	}
}

// TestInstallCannotLockUpTheCluster: the ValidatingWebhookConfiguration as
// the chart creates it (no webhooks, failurePolicy Fail in its template)
// blocks nothing while no controller is ready; a ready controller registers
// the webhooks (never matching its own namespace or kube-system) and bad
// Ingresses are denied; a controller that stops while its Deployment wants
// replicas leaves them registered (with Fail, writes wait for a replica);
// one that stops after its Deployment was scaled to zero removes them, and
// writes are admitted again.
func TestInstallCannotLockUpTheCluster(t *testing.T) {
	const ns = "htc-install"
	f := setUpInstall(t, ns, "Fail")
	dir := t.TempDir()
	c := generateCerts(t, dir)
	withRegistration := func(o *controller.Options) {
		o.ConfigNamespace = ns
		o.WebhookAddr = f.addr
		o.WebhookConfiguration = ns
		o.DeploymentName = "htc"
	}

	// Nothing registered, no controller: writes are admitted.
	hooks, err := f.registered(t)
	require.NoError(t, err)
	require.Empty(t, hooks)
	waitWritesAdmitted(t, nil, "no controller runs and nothing is registered")

	// A controller that can never become ready (its config does not
	// exist) registers nothing.
	never := startController(t, c, withRegistration, func(o *controller.Options) { o.ConfigName = "does-not-exist" })
	require.Eventually(t, func() bool {
		code, body, err := get("http://" + never.healthAddr + "/readyz")
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "not synced")
	}, 30*time.Second, 50*time.Millisecond, "the never-ready controller answers /readyz 503\n%s", logsOf(never))
	for _, m := range []string{badIngress, aService} {
		r := dryRun(t, m)
		require.NoError(t, r.err, "a write is refused while the only controller is not ready:\n%s", r)
	}
	hooks, err = f.registered(t)
	require.NoError(t, err)
	assert.Empty(t, hooks, "a controller that is not ready registers nothing")
	never.stop()

	// A ready controller registers the webhooks; the bad Ingress is denied.
	rc := startController(t, c, withRegistration)
	rc.waitReady(t, 60*time.Second)
	hooks = f.waitRegistered(t, rc, true)
	names := make([]string, 0, len(hooks))
	for _, h := range hooks {
		names = append(names, h.Name)
		assert.Equal(t, admissionregistrationv1.Fail, *h.FailurePolicy, h.Name)
		assert.Equal(t, f.url, *h.ClientConfig.URL, h.Name)
		assert.NotEmpty(t, h.ClientConfig.CABundle, h.Name)
		if h.Name == "haproxytemplateconfigs.validate.htc" {
			assert.Equal(t, []string{ns}, h.NamespaceSelector.MatchExpressions[0].Values, "the config's webhook sees its namespace only")
			continue
		}
		require.Len(t, h.NamespaceSelector.MatchExpressions, 1, h.Name)
		assert.Equal(t, []string{"htc-install", "kube-system"}, h.NamespaceSelector.MatchExpressions[0].Values,
			"%s never matches the controller's namespace or kube-system", h.Name)
	}
	assert.Equal(t, []string{"haproxytemplateconfigs.validate.htc", "ingresses.validate.htc", "services.validate.htc"}, names)
	r, n := eventually(t, 30*time.Second, denied, badIngress, "apply", "--dry-run=server", "-f", "-")
	require.True(t, denied(r), "the bad Ingress is not denied after %d attempts:\n%s\n%s", n, r, logsOf(rc))
	assert.Contains(t, r.stderr, `admission webhook "ingresses.validate.htc" denied the request: Service 'does-not-exist' not found`)
	r = kubectl(t, strings.ReplaceAll(badIngress, "namespace: default", "namespace: kube-system"), "apply", "--dry-run=server", "-f", "-")
	assert.NoError(t, r.err, "kube-system is never validated:\n%s", r)
	r = dryRun(t, aService)
	assert.NoError(t, r.err, "a Service is admitted:\n%s", r)

	// Stopped while its Deployment wants replicas: the webhooks stay (a
	// replacement serves them), so with Fail a write fails until one does.
	rc.stop()
	hooks, err = f.registered(t)
	require.NoError(t, err)
	assert.NotEmpty(t, hooks, "the webhooks stay while the Deployment wants replicas")
	assert.Contains(t, rc.logs.String(), "leaving the webhooks registered")
	r = dryRun(t, aService)
	require.Error(t, r.err, "with failurePolicy Fail and no replica, the write is refused")
	assert.Contains(t, r.stderr, "failed calling webhook")

	// Scaled to zero: the stopping controller removes the webhooks.
	rc = startController(t, c, withRegistration)
	rc.waitReady(t, 60*time.Second)
	mustKubectl(t, "", "scale", "-n", ns, "deployment/htc", "--replicas=0")
	rc.stop()
	hooks, err = f.registered(t)
	require.NoError(t, err)
	assert.Empty(t, hooks, "the webhooks are removed when the Deployment is scaled to zero\n%s", logsOf(rc))
	assert.Contains(t, rc.logs.String(), "webhooks removed")
	waitWritesAdmitted(t, rc, "the webhooks were removed")
}

// leaseHolder returns the holder of the config's Lease in ns ("" when none).
func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	r := kubectl(t, "", "get", "lease", "-n", ns, controller.LeaseName("htc"), "-o", "jsonpath={.spec.holderIdentity}")
	if r.err != nil {
		return ""
	}
	return r.stdout
}

// waitLeader waits until the Lease names id and the controller rc says it
// leads (htc_leader 1).
func waitLeader(t *testing.T, ns, id string, rc *runningController) {
	t.Helper()
	var holder string
	require.Eventually(t, func() bool {
		holder = leaseHolder(t, ns)
		v, err := metricValue(rc, "htc_leader")
		return holder == id && err == nil && v == 1
	}, 60*time.Second, 100*time.Millisecond, "%s never led; the Lease holder is %q\n%s", id, holder, logsOf(rc))
}

// eventHosts returns the reporting host (the replica's identity) of each
// Event on the config htc in ns: this one, by its UID, not one of the same
// name that an earlier run (go test -count) created and deleted.
func eventHosts(t *testing.T, ns string) []string {
	t.Helper()
	uid := kubectl(t, "", "get", "haproxytemplateconfig", "htc", "-n", ns, "-o", "jsonpath={.metadata.uid}")
	if uid.err != nil || uid.stdout == "" {
		return nil
	}
	r := kubectl(t, "", "get", "events", "-n", ns, "--field-selector", "involvedObject.uid="+uid.stdout,
		"-o", `jsonpath={range .items[*]}{.source.host}{"\n"}{end}`)
	if r.err != nil {
		return nil
	}
	return strings.Fields(r.stdout)
}

const (
	statusWritten  = `htc_status_updates_total{result="written"}`
	statusFollower = `htc_status_updates_total{result="not_leader"}`
)

// TestTwoReplicasOneWriter: two controllers against one API server elect a
// leader with the Lease. Both serve the webhook; only the leader writes the
// config's status, its Events and the webhook registration. When the
// leader stops (its Deployment still wants replicas, so the webhooks stay),
// the other takes the Lease over and writes the status of the next change.
func TestTwoReplicasOneWriter(t *testing.T) {
	const ns = "htc-leader"
	f := setUpInstall(t, ns, "Fail")
	c := generateCerts(t, t.TempDir())
	replica := func(id, addr string) func(*controller.Options) {
		return func(o *controller.Options) {
			o.ConfigNamespace = ns
			o.WebhookConfiguration = ns
			o.DeploymentName = "htc"
			o.LeaderElection = true
			o.Identity = id
			// short terms: a takeover is fast, and the renewals run
			// often enough to be exercised
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 6*time.Second, 4*time.Second, 500*time.Millisecond
			if addr != "" {
				o.WebhookAddr = addr
			}
		}
	}

	// a leads: it is alone when it campaigns. The registered webhooks point
	// at b's address (the template's URL): b serves them after a is gone.
	a := startController(t, c, replica("replica-a", ""))
	waitLeader(t, ns, "replica-a", a)
	a.waitReady(t, 60*time.Second)
	b := startController(t, c, replica("replica-b", f.addr))
	b.waitReady(t, 60*time.Second)

	// a wrote the status and registered the webhooks; b ran its rounds
	// and wrote nothing.
	waitMetricAbove(t, b, statusFollower, 0, "the follower never reported a status it kept")
	assert.Equal(t, "replica-a", leaseHolder(t, ns))
	v, err := metricValue(b, "htc_leader")
	require.NoError(t, err)
	assert.Zero(t, v, "b does not lead")
	assert.Zero(t, metric(t, b, statusWritten), "the follower writes no status")
	// counted once the write returned, which may be after the status shows
	waitMetricAbove(t, a, statusWritten, 0, "the leader wrote the status")
	f.waitRegistered(t, a, true)
	require.Eventually(t, func() bool { return len(eventHosts(t, ns)) > 0 }, 30*time.Second, 100*time.Millisecond, "the leader emitted no Event")
	for _, h := range eventHosts(t, ns) {
		assert.Equal(t, "replica-a", h, "only the leader emits Events")
	}
	assert.Contains(t, a.logs.String(), "webhooks registered")
	assert.NotContains(t, b.logs.String(), "webhooks registered")
	// both serve: b denies through the registered webhooks (they point at it)
	r, n := eventually(t, 30*time.Second, denied, badIngress, "apply", "--dry-run=server", "-f", "-")
	require.True(t, denied(r), "the bad Ingress is not denied after %d attempts:\n%s\n%s", n, r, logsOf(b))

	// a stops and releases the Lease: b takes over.
	a.stop()
	waitLeader(t, ns, "replica-b", b)
	hooks, err := f.registered(t)
	require.NoError(t, err)
	assert.NotEmpty(t, hooks, "the webhooks stay: the Deployment wants replicas")

	// b writes the status of the next change (through b's webhook) and its Event.
	gen := mustKubectl(t, configIn(t, ns, 8081), "apply", "-f", "-", "-o", "jsonpath={.metadata.generation}")
	require.Eventually(t, func() bool {
		r := kubectl(t, "", "get", "haproxytemplateconfig", "htc", "-n", ns,
			"-o", `jsonpath={.status.conditions[?(@.type=="Valid")].observedGeneration}`)
		return r.err == nil && r.stdout == gen
	}, 60*time.Second, 100*time.Millisecond, "the new leader never wrote the status of generation %s\n%s", gen, logsOf(b))
	// counted once the write returned, which may be after kubectl saw it
	waitMetricAbove(t, b, statusWritten, 0, "the new leader wrote the status")
	require.Eventually(t, func() bool {
		for _, h := range eventHosts(t, ns) {
			if h == "replica-b" {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the new leader emitted no Event")
}
