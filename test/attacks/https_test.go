package attacks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// resources maps the kinds of the corpus to their resources.
var resources = map[string]string{
	"Ingress": "ingresses", "Service": "services", "EndpointSlice": "endpointslices",
	"Secret": "secrets", "ConfigMap": "configmaps", "HAProxyTemplateConfig": "haproxytemplateconfigs",
	"GatewayClass": "gatewayclasses", "Gateway": "gateways", "HTTPRoute": "httproutes", "GRPCRoute": "grpcroutes",
	"TLSRoute": "tlsroutes", "TCPRoute": "tcproutes", "ListenerSet": "listenersets", "ReferenceGrant": "referencegrants",
	"BackendTLSPolicy": "backendtlspolicies",
}

// newUID returns a request uid naming the case.
func newUID(id string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "attacks-" + id + "-" + hex.EncodeToString(b)
}

// reviewFor builds the AdmissionReview the API server would send for the
// case (dry run, from an unprivileged user).
func reviewFor(c *Case, uid string) ([]byte, error) {
	subject := c.object
	if c.op == "DELETE" || subject == nil {
		subject = c.old
	}
	apiVersion, _ := subject["apiVersion"].(string)
	kind, _ := subject["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	res, ok := resources[kind]
	if !ok {
		return nil, fmt.Errorf("no resource known for kind %q", kind)
	}
	meta, _ := subject["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	dry := true
	req := &admissionv1.AdmissionRequest{
		UID:             types.UID(uid),
		Kind:            metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind},
		Resource:        metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: res},
		RequestKind:     &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind},
		RequestResource: &metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: res},
		Name:            name,
		Namespace:       ns,
		Operation:       admissionv1.Operation(c.op),
		UserInfo:        authenticationv1.UserInfo{Username: "system:serviceaccount:tenant-a:attacker", Groups: []string{"system:authenticated"}},
		DryRun:          &dry,
	}
	if c.op != "DELETE" && c.object != nil {
		if req.Object.Raw, err = json.Marshal(c.object); err != nil {
			return nil, err
		}
	}
	if c.old != nil && c.op != "CREATE" {
		if req.OldObject.Raw, err = json.Marshal(c.old); err != nil {
			return nil, err
		}
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

// exchange is one AdmissionReview sent to a controller and what came back.
type exchange struct {
	uid     string
	v       verdict
	body    []byte
	logs    string // the controller's log lines written meanwhile
	problem string // why there is no verdict
	took    time.Duration
}

// send posts the case's review to cp and waits for the controller's log
// line of the request.
func send(ctx context.Context, client *http.Client, cp *controllerProc, c *Case) exchange {
	x := exchange{uid: newUID(c.ID)}
	review, err := reviewFor(c, x.uid)
	if err != nil {
		x.problem = "building the AdmissionReview: " + err.Error()
		return x
	}
	before := len(cp.logs.String())
	start := time.Now()
	body, status, err := post(ctx, client, cp.url, review)
	x.took = time.Since(start)
	x.body = body
	switch {
	case err != nil:
		x.problem = fmt.Sprintf("no answer within the API server's webhook timeout (%s, charts/htc/values.yaml): %v", cluster.timeout, err)
	case status != http.StatusOK:
		x.problem = fmt.Sprintf("HTTP %d: %s", status, shorten(string(body)))
	default:
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &out); err != nil || out.Response == nil {
			x.problem = fmt.Sprintf("not an AdmissionReview response (%v): %s", err, shorten(string(body)))
			break
		}
		if string(out.Response.UID) != x.uid {
			x.problem = fmt.Sprintf("response uid %q, want %q", out.Response.UID, x.uid)
		}
		x.v = verdict{answered: x.problem == "", allowed: out.Response.Allowed, warnings: out.Response.Warnings}
		if out.Response.Result != nil {
			x.v.reason = out.Response.Result.Message
		}
	}
	if x.problem == "" && !cp.waitLog(jsonString(x.uid), 10*time.Second) {
		x.problem = "the controller logged no line for the request"
	}
	logs := cp.logs.String()
	if before <= len(logs) {
		x.logs = logs[before:]
	}
	return x
}

// leaks scans everything an exchange produced.
func (x exchange) leaks(label string, o scanOpts) []string {
	var out []string
	out = append(out, env.scan.scan(label+" reason", x.v.reason, o)...)
	for i, w := range x.v.warnings {
		out = append(out, env.scan.scan(fmt.Sprintf("%s warning %d", label, i), w, o)...)
	}
	out = append(out, env.scan.scan(label+" response body", string(x.body), o)...)
	out = append(out, env.scan.scanLogLines(label+" controller log", x.logs, o)...)
	return out
}

// TestHTTPS runs every case (but the exhaustion class, which
// TestBoundedWorstCase runs) over HTTPS against the real controller: one
// `htc controller` per base config, the groups in parallel, the cases of
// a group one after the other. Cases marked kubectl also go through kubectl
// --dry-run=server and the API server's webhook call (the example's
// controller for Ingresses, Services and configs, the gateway's for
// Gateway API objects).
func TestHTTPS(t *testing.T) {
	ensureCluster(t)
	configs := []string{"example", "wide", "gateway", "nginx"}
	ctrls := map[string]*controllerProc{}
	for _, cfg := range configs {
		ctrls[cfg] = startController(t, baseConfigNames[cfg])
	}
	registerWebhook(t, ctrls["example"])
	registerGatewayWebhook(t, ctrls["gateway"])
	client := webhookClient()
	for _, cfg := range configs {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel()
			for _, c := range env.cases {
				if c.Config != cfg {
					continue
				}
				t.Run(c.ID, func(t *testing.T) { runHTTPS(t, client, ctrls[cfg], c) })
			}
		})
	}
}

func runHTTPS(t *testing.T, client *http.Client, cp *controllerProc, c *Case) {
	if !c.runs("https") {
		t.Skipf("%s runs offline only", c.ID)
	}
	if c.Class == "exhaustion" {
		t.Skipf("%s runs in TestBoundedWorstCase", c.ID)
	}
	x := send(t.Context(), client, cp, c)
	var problems []string
	if x.problem != "" {
		problems = append(problems, x.problem)
	}
	problems = append(problems, verdictProblems(c, x.v)...)
	problems = append(problems, canaryProblems(c.ID)...)
	problems = append(problems, x.leaks("https", scanOpts{extra: c.MustNotLeak})...)
	t.Logf("allowed=%v reason=%q warnings=%q (%s)", x.v.allowed, shorten(x.v.reason), x.v.warnings, x.took.Round(time.Millisecond))
	if c.Kubectl {
		problems = append(problems, kubectlProblems(t, c)...)
	}
	if !cp.alive() {
		problems = append(problems, "the controller exited")
	}
	finish(t, c, "https", problems)
}

// webhookEntry is one webhook of a ValidatingWebhookConfiguration calling
// cp for a resource in the namespaces of the corpus.
func webhookEntry(cp *controllerProc, name, group, version, res string) string {
	ca := base64.StdEncoding.EncodeToString(cluster.cert.CertPEM)
	return fmt.Sprintf(`- name: %s
  clientConfig: {url: %q, caBundle: %s}
  rules: [{apiGroups: [%q], apiVersions: [%q], resources: [%q], operations: [CREATE, UPDATE]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: %d
  namespaceSelector:
    matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [default, htc-system, tenant-a]}]
`, name, cp.url, ca, group, version, res, int(cluster.timeout.Seconds()))
}

// registerGatewayWebhook registers cp (the gateway config's controller)
// for Gateways, HTTPRoutes and ReferenceGrants in the namespaces of the
// corpus, and waits until the API server calls it.
func registerGatewayWebhook(t *testing.T, cp *controllerProc) {
	t.Helper()
	vwc := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: htc-attacks-gateway}\nwebhooks:\n"
	for _, res := range []string{"gateways", "httproutes", "referencegrants"} {
		vwc += webhookEntry(cp, res+".attacks.htc", "gateway.networking.k8s.io", "v1", res)
	}
	if r := kubectl(t.Context(), vwc, "apply", "-f", "-"); r.err != nil {
		t.Fatalf("registering the gateway webhook: %s", r)
	}
	t.Cleanup(func() {
		kubectl(context.Background(), "", "delete", "validatingwebhookconfiguration", "htc-attacks-gateway", "--ignore-not-found")
	})
	probe := `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"probe","namespace":"default"},
"spec":{"parentRefs":[{"name":"gw"}],"rules":[{"backendRefs":[{"name":"probe-missing","port":80}]}]}}`
	waitForWebhook(t, probe)
}

// waitForWebhook probes until the API server calls the webhook (it picks a
// configuration up asynchronously): a dry run of probe, an object the
// webhook denies, is denied by it.
func waitForWebhook(t *testing.T, probe string) {
	t.Helper()
	var r kubectlResult
	for attempt := 0; attempt < 100; attempt++ {
		r = kubectl(t.Context(), probe, "create", "--dry-run=server", "-f", "-")
		if r.err != nil && strings.Contains(r.stderr, "denied the request") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the API server never called the webhook: %s", r)
}

// registerWebhook registers cp for Ingresses, Services and
// HAProxyTemplateConfigs (the example's validated kinds) in the namespaces
// of the corpus, and waits until the API server calls it.
func registerWebhook(t *testing.T, cp *controllerProc) {
	t.Helper()
	vwc := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: htc-attacks}\nwebhooks:\n" +
		webhookEntry(cp, "ingresses.attacks.htc", "networking.k8s.io", "v1", "ingresses") +
		webhookEntry(cp, "services.attacks.htc", "", "v1", "services") +
		webhookEntry(cp, "haproxytemplateconfigs.attacks.htc", "haproxy-template.io", "v1alpha1", "haproxytemplateconfigs")
	if r := kubectl(t.Context(), vwc, "apply", "-f", "-"); r.err != nil {
		t.Fatalf("registering the webhook: %s", r)
	}
	t.Cleanup(func() {
		kubectl(context.Background(), "", "delete", "validatingwebhookconfiguration", "htc-attacks", "--ignore-not-found")
	})
	// Until the webhook denies an Ingress without its Service.
	waitForWebhook(t, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"probe","namespace":"default"},
"spec":{"ingressClassName":"htc","rules":[{"host":"probe.example.com","http":{"paths":[{"path":"/","pathType":"Prefix",
"backend":{"service":{"name":"probe-missing","port":{"number":80}}}}]}}]}}`)
}

// kubectlProblems sends the case through kubectl --dry-run=server: create
// for a new object, replace for an existing one.
func kubectlProblems(t *testing.T, c *Case) []string {
	verb := "create"
	if c.op == "UPDATE" {
		verb = "replace"
	}
	file, err := writeJSON(filepath.Join(env.root, "kubectl", c.ID), "object.json", c.object)
	if err != nil {
		return []string{err.Error()}
	}
	r := kubectl(t.Context(), "", verb, "--dry-run=server", "-f", file)
	t.Logf("kubectl %s: %s", verb, r)
	var out []string
	denied := r.err != nil && strings.Contains(r.stderr, "denied the request")
	switch {
	case c.Expect == "deny" && !denied:
		out = append(out, fmt.Sprintf("kubectl %s --dry-run=server: want a webhook denial, got %s", verb, r))
	case c.Expect == "allow" && r.err != nil:
		out = append(out, fmt.Sprintf("kubectl %s --dry-run=server: want success, got %s", verb, r))
	}
	if c.reason != nil && denied && !c.reason.MatchString(r.stderr) {
		out = append(out, fmt.Sprintf("kubectl: reason %q does not match %q", shorten(r.stderr), c.Reason))
	}
	o := scanOpts{extra: c.MustNotLeak}
	out = append(out, env.scan.scan("kubectl stderr", r.stderr, o)...)
	out = append(out, env.scan.scan("kubectl stdout", r.stdout, o)...)
	return out
}
