package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedCertificate: without cert-manager the chart generates a CA and
// a serving certificate for the Service, and the webhooks trust that CA.
func TestGeneratedCertificate(t *testing.T) {
	objs := docs(t, render(t))
	var secret map[string]any
	for _, s := range byKind(objs, "Secret") {
		if m(s["metadata"])["name"] == "htc-webhook-tls" {
			secret = s
		}
	}
	require.NotNil(t, secret, "Secret htc-webhook-tls")
	assert.Equal(t, "kubernetes.io/tls", secret["type"])
	data := m(secret["data"])
	decode := func(k string) []byte {
		b, err := base64.StdEncoding.DecodeString(data[k].(string))
		require.NoError(t, err, k)
		return b
	}
	caPEM := decode("ca.crt")
	// the controller registers the Secret's ca.crt (the template has none)
	cc := registrationTemplate(t, one(t, objs, "ValidatingWebhookConfiguration")).ClientConfig
	assert.Empty(t, cc.CABundle)
	require.NotNil(t, cc.Service)
	assert.Equal(t, "htc", cc.Service.Name)
	assert.Equal(t, releaseNS, cc.Service.Namespace)
	assert.Equal(t, "/validate", *cc.Service.Path)
	assert.Equal(t, int32(443), *cc.Service.Port)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	block, _ := pem.Decode(decode("tls.crt"))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "htc.htc-system.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)
	keyBlock, _ := pem.Decode(decode("tls.key"))
	require.NotNil(t, keyBlock)

	// out of cluster: the certificate also covers the url's host, so the
	// controller can serve it with --webhook-cert-secret.
	objs = docs(t, render(t, "-f", "testdata/values-out-of-cluster.yaml"))
	for _, s := range byKind(objs, "Secret") {
		if m(s["metadata"])["name"] == "htc-webhook-tls" {
			data = m(s["data"])
		}
	}
	pool = x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(decode("ca.crt")))
	block, _ = pem.Decode(decode("tls.crt"))
	cert, err = x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	assert.NoError(t, err)
	cc = registrationTemplate(t, one(t, objs, "ValidatingWebhookConfiguration")).ClientConfig
	require.NotNil(t, cc.URL)
	assert.Equal(t, "https://127.0.0.1:9443/validate", *cc.URL)
	assert.Nil(t, cc.Service)
}

// TestValuesSchema: values.schema.json refuses bad values before anything is rendered.
func TestValuesSchema(t *testing.T) {
	helm := requireHelm(t)
	for name, set := range map[string]string{
		"failurePolicy":            "webhook.failurePolicy=Sometimes",
		"timeoutSeconds":           "webhook.timeoutSeconds=60",
		"url-not-https":            "webhook.url=http://127.0.0.1:9443/validate",
		"watched-without-index":    "config.watchedResources.extra.apiVersion=v1,config.watchedResources.extra.resources=configmaps",
		"bad-apiVersion":           "config.watchedResources.ingresses.apiVersion=networking.k8s.io/v1/x",
		"haproxy-port-zero":        "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=0",
		"haproxy-port-too-big":     "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=65536",
		"haproxy-port-no-name":     "haproxy.ports[0].containerPort=8080",
		"haproxy-port-bad-name":    "haproxy.ports[0].name=HTTP_1,haproxy.ports[0].containerPort=8080",
		"haproxy-port-unknown":     "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=8080,haproxy.ports[0].hostPort=80",
		"haproxy-runDir-relative":  "haproxy.runDir=var/run/htc",
		"haproxy-runDir-quote":     "haproxy.runDir=/var/run/it's",
		"haproxy-configDir-space":  "haproxy.configDir=/etc/haproxy/my cfg",
		"log-level":                "controller.logLevel=trace",
		"log-format":               "controller.logFormat=logfmt",
		"watch-namespace":          "controller.watchNamespaces={Team_A}",
		"pprof-string":             "controller.pprof=maybe",
		"service-monitor-unknown":  "metrics.serviceMonitor.enable=true",
		"service-monitor-interval": "metrics.serviceMonitor.interval=often",
		"rule-error-ratio":         "metrics.prometheusRule.webhookErrorRatio=2",
		"rule-latency":             "metrics.prometheusRule.webhookLatencyP99Seconds=0",
		"rule-for":                 "metrics.prometheusRule.for=soon",
		"dashboard-labels":         "metrics.grafanaDashboard.labels.a.b=c",
		"crds-unknown":             "crds.install=true",
		"ingress-class-name":       "ingressClass.name=web",
		"ingress-class-controller": "ingressClass.controller=htc",
		"lease-not-a-duration":     "leaderElection.leaseDuration=15",
		"lease-negative":           "leaderElection.retryPeriod=-2s",
		"leader-unknown":           "leaderElection.leaseName=x",
		"leader-elect-not-bool":    "leaderElection.enabled=yes",
		"allowed-directive-space":  "controller.allowedDirectives={lua load}",
		"allowed-path-relative":    "controller.allowedDirectives={path:etc}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion, "--set", set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "values don't meet the specifications of the schema")
		})
	}
}
