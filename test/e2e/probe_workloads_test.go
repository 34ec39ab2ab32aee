package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var metav1CreateOptions = metav1.CreateOptions{}

// probeService is an ExternalName Service "local" in ns to localhost:port
// (the API server refuses loopback addresses in EndpointSlices).
func probeService(ns string, port int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: local, namespace: %s}\nspec: {type: ExternalName, externalName: localhost, ports: [{port: %d}]}\n", ns, port)
}

// probeHost is route i's host name.
func probeHost(i int) string { return "r" + strconv.Itoa(i) + ".probe.example.com" }

// ingressProbe: Ingresses of the example Ingress library, one host each,
// path / to the backend; a route is served when the backend answers for
// its host (the host maps changed: a runtime change).
type ingressProbe struct{}

const (
	ingressProbeNS       = "probe"
	ingressProbeConfigNS = "htc-probe"
)

func (ingressProbe) configNamespace() string { return ingressProbeConfigNS }

func (ingressProbe) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
}

func (ingressProbe) setup(t *testing.T, frontendPort string, backendPort int) {
	for _, ns := range []string{ingressProbeConfigNS, ingressProbeNS} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	r, _ := eventually(t, 15*time.Second, succeeded, ingressLibraryConfig(t, env.root, ingressProbeConfigNS, "probe", frontendPort), "apply", "-f", "-")
	require.NoError(t, r.err, "applying the config:\n%s", r)
	mustKubectl(t, probeService(ingressProbeNS, backendPort), "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", "htc-probe", "--ignore-not-found")
		deleteProbeRoutes(t, ingressProbe{}, ingressProbeNS)
		cleanupKubectl(t, "delete", "-n", ingressProbeNS, "service/local", "--ignore-not-found")
		cleanupKubectl(t, "delete", "-n", ingressProbeConfigNS, "haproxytemplateconfig/htc", "--ignore-not-found")
	})
}

func (ingressProbe) route(i, backendPort int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": "r" + strconv.Itoa(i), "namespace": ingressProbeNS, "labels": map[string]any{publishLabel: "probe"}},
		"spec": map[string]any{
			"ingressClassName": "htc",
			"rules": []any{map[string]any{"host": probeHost(i), "http": map[string]any{"paths": []any{map[string]any{
				"path": "/", "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": "local", "port": map[string]any{"number": int64(backendPort)}}},
			}}}}},
		},
	}}
}

func (ingressProbe) request(base string, i int) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err == nil {
		req.Host = probeHost(i)
	}
	return req, err
}

func (ingressProbe) served(resp *http.Response, i int) bool {
	return resp.Header.Get("x-probe-host") == probeHost(i)
}

func (ingressProbe) registerWebhook(t *testing.T, url string, caPEM []byte) {
	registerProbeWebhook(t, url, caPEM, "networking.k8s.io", "ingresses", ingressProbeNS)
	missing := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: missing, namespace: ` + ingressProbeNS + `, labels: {` + publishLabel + `: probe}}
spec:
  ingressClassName: htc
  rules: [{host: missing.probe.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: missing, port: {number: 80}}}}]}}]
`
	waitWebhookJudges(t, missing)
}

// gatewayProbe: HTTPRoutes of the Gateway library like the field's
// benchmark: a hostname, a PathPrefix match and request and response
// header modifiers; a route is served when the answer carries the
// response header it adds and the backend saw the request header it adds.
// (The field's routes have a second rule to a Service that does not
// exist: the library refuses those as BackendNotFound, so it is left out.)
type gatewayProbe struct{}

const (
	gatewayProbeNS       = "probe-gw"
	gatewayProbeConfigNS = "htc-probe-gw"
)

func (gatewayProbe) configNamespace() string { return gatewayProbeConfigNS }

func (gatewayProbe) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
}

func (gatewayProbe) setup(t *testing.T, frontendPort string, backendPort int) {
	installGatewayCRDs(t)
	for _, ns := range []string{gatewayProbeConfigNS, gatewayProbeNS} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	raw, err := os.ReadFile(filepath.Join(env.root, "examples/gateway/config.yaml"))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	cfg["metadata"].(map[string]any)["namespace"] = gatewayProbeConfigNS
	// The library's embedded tests expect its extraContext as shipped,
	// except that ExternalName Services (the only way to a backend on
	// 127.0.0.1) are allowed here: the test that they are refused by
	// default is left out. HAProxy binds the Gateway's address,
	// 127.0.0.1, on the listener port plus the library's portOffset.
	spec := cfg["spec"].(map[string]any)
	extra := spec["extraContext"].(map[string]any)
	extra["allowExternalNameServices"] = true
	_, health, _ := strings.Cut(freeAddr(t), ":")
	extra["healthPort"], err = strconv.Atoi(health)
	require.NoError(t, err)
	delete(spec["validationTests"].(map[string]any), "externalname-services-are-refused-by-default")
	port, err := strconv.Atoi(frontendPort)
	require.NoError(t, err)
	offset, ok := extra["portOffset"].(float64)
	require.True(t, ok && port > int(offset), "the frontend port %d must be above the library's portOffset %v", port, extra["portOffset"])
	listenerPort := port - int(offset)
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	r, _ := eventually(t, 15*time.Second, succeeded, string(b), "apply", "--server-side", "--force-conflicts", "-f", "-")
	require.NoError(t, r.err, "applying the Gateway library:\n%s", r)
	objects := `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: htc-probe}
spec: {controllerName: haproxy-template.io/htc}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ` + gatewayProbeNS + `}
spec:
  gatewayClassName: htc-probe
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners: [{name: http, port: ` + strconv.Itoa(listenerPort) + `, protocol: HTTP}]
---
` + probeService(gatewayProbeNS, backendPort)
	mustKubectl(t, objects, "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", "htc-probe", "--ignore-not-found")
		deleteProbeRoutes(t, gatewayProbe{}, gatewayProbeNS)
		if r := kubectl(t, objects, "delete", "--ignore-not-found", "-f", "-"); r.err != nil {
			t.Errorf("cleanup: %s", r)
		}
		cleanupKubectl(t, "delete", "-n", gatewayProbeConfigNS, "haproxytemplateconfig/htc", "--ignore-not-found")
	})
}

func (gatewayProbe) route(i, backendPort int) *unstructured.Unstructured {
	name := "r" + strconv.Itoa(i)
	header := func(n string) map[string]any {
		return map[string]any{"add": []any{map[string]any{"name": n, "value": name}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": gatewayProbeNS},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw"}},
			"hostnames":  []any{probeHost(i)},
			"rules": []any{map[string]any{
				"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/" + strconv.Itoa(i)}}},
				"filters": []any{
					map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": header("x-probe-route")},
					map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": header("x-probe-added")},
				},
				"backendRefs": []any{map[string]any{"name": "local", "port": int64(backendPort)}},
			}},
		},
	}}
}

func (gatewayProbe) request(base string, i int) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/"+strconv.Itoa(i), nil)
	if err == nil {
		req.Host = probeHost(i)
	}
	return req, err
}

func (gatewayProbe) served(resp *http.Response, i int) bool {
	name := "r" + strconv.Itoa(i)
	return resp.Header.Get("x-probe-added") == name && resp.Header.Get("x-probe-saw") == name
}

func (gatewayProbe) registerWebhook(t *testing.T, url string, caPEM []byte) {
	registerProbeWebhook(t, url, caPEM, "gateway.networking.k8s.io", "httproutes", gatewayProbeNS)
	missing := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: missing, namespace: ` + gatewayProbeNS + `}
spec:
  parentRefs: [{name: gw}]
  rules: [{filters: [{type: ExtensionRef, extensionRef: {group: example.com, kind: Filter, name: x}}], backendRefs: [{name: local, port: 80}]}]
`
	waitWebhookJudges(t, missing)
}

// deleteProbeRoutes deletes every route of w in ns in one request (a
// kubectl delete --all of thousands runs past kubectl's time limit).
func deleteProbeRoutes(t *testing.T, w probeWorkload, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := probeDynamicClient(t).Resource(w.gvr()).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("cleanup: deleting the routes of %s: %v", ns, err)
	}
}

// registerProbeWebhook registers the controller's webhook at url for the
// CREATE, UPDATE and DELETE of group's resource in namespace ns.
func registerProbeWebhook(t *testing.T, url string, caPEM []byte, group, resource, ns string) {
	t.Helper()
	mustKubectl(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: htc-probe}
webhooks:
- name: probe.validate.htc
  clientConfig: {url: %s, caBundle: %s}
  rules: [{apiGroups: [%q], apiVersions: [v1], resources: [%s], operations: [CREATE, UPDATE, DELETE]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: %d
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: In, values: [%s]}
`, url, base64.StdEncoding.EncodeToString(caPEM), group, resource, webhookTimeoutSeconds, ns), "apply", "-f", "-")
}

// waitWebhookJudges waits until the API server sends the invalid object
// to the webhook, which denies it (a server-side dry run).
func waitWebhookJudges(t *testing.T, invalid string) {
	t.Helper()
	r, attempts := eventually(t, 30*time.Second, denied, invalid, "create", "--dry-run=server", "-f", "-")
	require.True(t, denied(r), "the webhook never judged after %d dry runs: %s", attempts, r)
}

// probeSample is one probed route.
type probeSample struct {
	present       int           // routes present before it
	apply, served time.Duration // apply (admission included); apply returned → first 200
	errors        int           // answers neither 404 nor 200 while waiting
}

// probeTable is the run's result as a Markdown table row with its header;
// floors are the bare haproxy -c runs of the published configuration.
func probeTable(p probeParams, samples []probeSample, refused []string, floors []time.Duration) string {
	var served, apply []time.Duration
	errors := 0
	for _, s := range samples {
		served = append(served, s.served)
		apply = append(apply, s.apply)
		errors += s.errors
	}
	slices.Sort(served)
	slices.Sort(apply)
	slices.Sort(floors)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" }
	q := func(ds []time.Duration, f float64) string {
		if len(ds) == 0 {
			return "-"
		}
		return ms(ds[min(len(ds)-1, int(f*float64(len(ds))))])
	}
	var b strings.Builder
	ratio := func(ds []time.Duration) string {
		if len(ds) == 0 || len(floors) == 0 || floors[len(floors)/2] <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", float64(ds[len(ds)/2])/float64(floors[len(floors)/2]))
	}
	b.WriteString("| workload | routes present | served p50 | p90 | p99 | max | apply p50 | apply p99 | refused | errors | bare haproxy -c p50 / p99 | served p50 ÷ floor | apply p50 ÷ floor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %d–%d | %s | %s | %s | %s | %s | %s | %d | %d | %s / %s | %s | %s |\n", p.workload, p.preload, p.preload+p.n,
		q(served, 0.5), q(served, 0.9), q(served, 0.99), q(served, 1), q(apply, 0.5), q(apply, 0.99), len(refused), errors,
		q(floors, 0.5), q(floors, 0.99), ratio(served), ratio(apply))
	for _, r := range refused {
		fmt.Fprintf(&b, "refused: %s\n", r)
	}
	return b.String()
}
