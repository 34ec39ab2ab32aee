package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControllerHelpDocumentsEveryFlag(t *testing.T) {
	code, stdout, _ := htc(t, "controller", "--help")
	assert.Equal(t, exitOK, code)
	for flag, env := range map[string]string{
		"kubeconfig":             "KUBECONFIG",
		"config-namespace":       "HTC_CONFIG_NAMESPACE",
		"config-name":            "HTC_CONFIG_NAME",
		"webhook-port":           "HTC_WEBHOOK_PORT",
		"webhook-cert-file":      "HTC_WEBHOOK_CERT_FILE",
		"webhook-key-file":       "HTC_WEBHOOK_KEY_FILE",
		"webhook-cert-secret":    "HTC_WEBHOOK_CERT_SECRET",
		"webhook-client-ca-file": "HTC_WEBHOOK_CLIENT_CA_FILE",
		"metrics-addr":           "HTC_METRICS_ADDR",
		"health-addr":            "HTC_HEALTH_ADDR",
		"webhook-bind-address":   "HTC_WEBHOOK_BIND_ADDRESS",
		"output-dir":             "HTC_OUTPUT_DIR",
		"haproxy-master-socket":  "HTC_HAPROXY_MASTER_SOCKET",
		"debounce":               "HTC_DEBOUNCE",
		"max-delay":              "HTC_MAX_DELAY",
	} {
		assert.Contains(t, stdout, "-"+flag+" string", flag)
		assert.Contains(t, stdout, "(env "+env+")", flag)
	}
	assert.Contains(t, stdout, `(default "9443")`)
	assert.Contains(t, stdout, `(default ":9090")`)
	assert.Contains(t, stdout, `(default ":8081")`)
	assert.Contains(t, stdout, `(default "100ms")`)
	assert.Contains(t, stdout, `(default "1s")`)
	assert.Contains(t, stdout, "htc is starting: stores not synced")
	assert.Contains(t, stdout, "haproxy -W -S SOCKET -f DIR/haproxy.cfg", "--help says how HAProxy must run to be reloaded")
}

func TestControllerMissingInputExitsTwoWithOneLine(t *testing.T) {
	unsetEnv(t, "HTC_CONFIG_NAMESPACE", "HTC_CONFIG_NAME", "HTC_WEBHOOK_PORT", "HTC_WEBHOOK_CERT_FILE", "HTC_WEBHOOK_KEY_FILE", "HTC_WEBHOOK_CERT_SECRET",
		"HTC_WEBHOOK_BIND_ADDRESS", "HTC_OUTPUT_DIR", "HTC_HAPROXY_MASTER_SOCKET", "HTC_DEBOUNCE", "HTC_MAX_DELAY")
	valid := []string{"controller", "--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "a/b"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no namespace", []string{"controller"}, "--config-namespace (or HTC_CONFIG_NAMESPACE) is required"},
		{"no name", []string{"controller", "--config-namespace", "ns"}, "--config-name (or HTC_CONFIG_NAME) is required"},
		{"no certificate", []string{"controller", "--config-namespace", "ns", "--config-name", "n"}, "a serving certificate is required"},
		{"cert without key", []string{"controller", "--config-namespace", "ns", "--config-name", "n", "--webhook-cert-file", "c"}, "must be set together"},
		{"both sources", []string{"controller", "--config-namespace", "ns", "--config-name", "n", "--webhook-cert-file", "c", "--webhook-key-file", "k", "--webhook-cert-secret", "a/b"}, "not both"},
		{"bad secret", []string{"controller", "--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "nope"}, "not namespace/name"},
		{"bad port", []string{"controller", "--webhook-port", "http"}, `--webhook-port: "http" is not a port number`},
		{"positional", []string{"controller", "extra"}, `unexpected argument "extra"`},
		{"bad bind address", append(valid, "--webhook-bind-address", "localhost"), `--webhook-bind-address: "localhost" is not an IP address`},
		{"socket without output dir", append(valid, "--haproxy-master-socket", "/run/m.sock"), "--haproxy-master-socket needs --output-dir"},
		{"bad debounce", append(valid, "--debounce", "soon"), `--debounce: "soon" is not a positive duration`},
		{"zero max delay", append(valid, "--max-delay", "0s"), `--max-delay: "0s" is not a positive duration`},
		{"max delay below debounce", append(valid, "--debounce", "2s", "--max-delay", "1s"), "--max-delay (1s) must not be shorter than --debounce (2s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := htc(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tc.want)
			assert.Equal(t, 1, strings.Count(strings.TrimRight(stderr, "\n"), "\n")+1, "one line on stderr: %q", stderr)
		})
	}
}

func TestControllerEnvFallback(t *testing.T) {
	t.Setenv("HTC_CONFIG_NAMESPACE", "ns")
	t.Setenv("HTC_CONFIG_NAME", "n")
	unsetEnv(t, "HTC_WEBHOOK_PORT", "HTC_WEBHOOK_CERT_FILE", "HTC_WEBHOOK_KEY_FILE", "HTC_WEBHOOK_CERT_SECRET")
	code, _, stderr := htc(t, "controller")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "a serving certificate is required", "namespace and name came from the environment")
}

// unsetEnv unsets the variables for the test (restored afterwards).
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		require.NoError(t, os.Unsetenv(n))
	}
}
