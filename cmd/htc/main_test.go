package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

const (
	exampleConfig = "../../examples/ingress/config.yaml"
	exampleState  = "../../examples/ingress/state"
	goodIngress   = "../../examples/ingress/good-ingress.yaml"
	badIngress    = "../../examples/ingress/bad-ingress.yaml"
)

// htc runs the CLI in-process and returns exit code, stdout and stderr.
func htc(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	assert.NotContains(t, errOut.String(), "goroutine", "no stack traces on stderr")
	assert.NotContains(t, errOut.String(), "panic")
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestValidateExample(t *testing.T) {
	code, out, stderr := htc(t, "validate", "-f", exampleConfig)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.NotContains(t, out, "FAIL")
	assert.Regexp(t, `(\d+)/(\d+) validation tests passed`, out)
}

func TestValidateOneTestJSON(t *testing.T) {
	code, out, _ := htc(t, "validate", "-f", exampleConfig, "--test", "basic-routing", "-o", "json")
	require.Equal(t, exitOK, code, out)
	var report struct {
		Passed, Total int
		Results       []struct{ Name, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	assert.Equal(t, 1, report.Total)
	assert.Equal(t, 1, report.Passed)
	assert.Equal(t, "basic-routing", report.Results[0].Name)
}

func TestValidateFailingTest(t *testing.T) {
	cfg := writeFile(t, "c.yaml", `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources: {services: {apiVersion: v1, resources: services, indexBy: [metadata.name]}}
  haproxyConfig: {template: "global\n  maxconn 10\n"}
  validationTests:
    wants-bogus: {assertions: [{type: contains, pattern: bogus}]}
    fine: {assertions: [{type: contains, pattern: maxconn}]}
`)
	code, out, _ := htc(t, "validate", "-f", cfg)
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "FAIL  wants-bogus")
	assert.Contains(t, out, "PASS  fine")
	assert.Contains(t, out, "1/2 validation tests passed")
}

func TestCheckExample(t *testing.T) {
	code, out, stderr := htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "allowed\n", out)

	code, out, _ = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", badIngress)
	assert.Equal(t, exitRejected, code)
	assert.Equal(t, "denied: Service 'api' not found\n", out)
}

func TestCheckJSONIsAdmissionReview(t *testing.T) {
	code, out, _ := htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", badIngress, "-o", "json")
	assert.Equal(t, exitRejected, code)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal([]byte(out), &review))
	assert.Equal(t, "admission.k8s.io/v1", review.APIVersion)
	assert.Equal(t, "AdmissionReview", review.Kind)
	require.NotNil(t, review.Response)
	assert.False(t, review.Response.Allowed)
	assert.EqualValues(t, 403, review.Response.Result.Code)
	assert.Equal(t, "Service 'api' not found", review.Response.Result.Message)
}

func TestCheckOperations(t *testing.T) {
	// The echo Ingress of the state routes to the echo Service.
	echoSvc := writeFile(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: echo, namespace: default}\nspec: {ports: [{name: http, port: 80}]}\n")
	brokenEcho := writeFile(t, "ing.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: echo, namespace: default}
spec:
  ingressClassName: htc
  rules: [{host: echo.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: gone, port: {number: 80}}}}]}}]
`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"delete a Service an Ingress needs", []string{"--object", echoSvc, "--operation", "delete"}, exitRejected, "denied: Service default/echo is still needed by Ingress default/echo: Service 'echo' not found\n"},
		{"update defaults when the object exists", []string{"--object", brokenEcho}, exitRejected, "denied: Service 'gone' not found\n"},
		{"update of an unchanged Service", []string{"--object", echoSvc}, exitOK, "allowed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "-f", exampleConfig, "--state", exampleState}, tc.args...)
			code, out, stderr := htc(t, args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Equal(t, tc.out, out)
		})
	}
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	cm := writeFile(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n")
	badYAML := writeFile(t, "bad.yaml", "apiVersion: v1\nkind: [\n")
	badCfg := writeFile(t, "cfg.yaml", "apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: x}\nspec:\n  watchedResources: {svc: {apiVersion: v1, resources: services}}\n  haproxyConfig: {template: \"{{ if }}\"}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing config file", []string{"validate", "-f", "/nonexistent/config.yaml"}, "/nonexistent/config.yaml"},
		{"no config flag", []string{"validate"}, "-f/--config is required"},
		{"unknown flag", []string{"check", "--bogus"}, "unknown flag: --bogus (see 'htc check --help')"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"bad output format", []string{"validate", "-f", exampleConfig, "-o", "xml"}, `--output: "xml" is not one of text, json`},
		{"missing object file", []string{"check", "-f", exampleConfig, "--object", "/nonexistent.yaml"}, "/nonexistent.yaml"},
		{"invalid YAML object", []string{"check", "-f", exampleConfig, "--object", badYAML}, "invalid YAML"},
		{"object nobody watches", []string{"check", "-f", exampleConfig, "--state", exampleState, "--object", cm}, "no watched resource covers v1 configmaps"},
		{"missing state dir", []string{"render", "-f", exampleConfig, "--state", "/nonexistent-dir"}, "/nonexistent-dir"},
		{"invalid config names the fields", []string{"validate", "-f", badCfg}, "spec.watchedResources[svc].indexBy: Required value"},
		{"unknown test", []string{"validate", "-f", exampleConfig, "--test", "nope"}, `no validation test named "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := htc(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tc.want)
			assert.Equal(t, 1, strings.Count(strings.TrimRight(stderr, "\n"), "\n")+1, "one line on stderr: %q", stderr)
		})
	}
}

func TestInvalidConfigReportsTemplateLine(t *testing.T) {
	badCfg := writeFile(t, "cfg.yaml", "apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: x}\nspec:\n  watchedResources: {svc: {apiVersion: v1, resources: services, indexBy: [metadata.name]}}\n  haproxyConfig: {template: \"global\\n{{ if }}\\n\"}\n")
	code, _, stderr := htc(t, "validate", "-f", badCfg)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "spec.haproxyConfig.template")
	assert.Contains(t, stderr, "line 2")
}

func TestRender(t *testing.T) {
	code, out, stderr := htc(t, "render", "-f", exampleConfig, "--state", exampleState)
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, strings.HasPrefix(out, "# ---- haproxy.cfg ----\nglobal"), out)
	assert.Contains(t, out, "backend default_echo_http")
	assert.Contains(t, out, "# ---- maps/host-path-prefix.map ----\necho.example.com/ default_echo_http")
	assert.Contains(t, out, "# ---- certs/default_echo-tls.pem ----")

	dir := t.TempDir()
	code, _, stderr = htc(t, "render", "-f", exampleConfig, "--state", exampleState, "--out", dir)
	require.Equal(t, exitOK, code, stderr)
	cfg, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), filepath.Join(dir, "maps", "host-path-prefix.map"), "pathFor points into --out")
	_, err = os.Stat(filepath.Join(dir, "certs", "default_echo-tls.pem"))
	assert.NoError(t, err)
}

// htc render --status shows the status documents the controller would
// apply, offline: to a file, or instead of the bundle with -.
func TestRenderStatus(t *testing.T) {
	raw, err := os.ReadFile(exampleConfig)
	require.NoError(t, err)
	cfg := writeFile(t, "cfg.yaml", strings.Replace(string(raw), "statusAddresses: []", "statusAddresses: [203.0.113.10, lb.example.com]", 1))
	const want = "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: echo\n  namespace: default\n" +
		"status:\n  loadBalancer:\n    ingress:\n    - ip: 203.0.113.10\n    - hostname: lb.example.com\n"
	code, out, stderr := htc(t, "render", "-f", cfg, "--state", exampleState, "--status", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, want, out, "only the status documents")

	file := filepath.Join(t.TempDir(), "status.yaml")
	code, out, stderr = htc(t, "render", "-f", cfg, "--state", exampleState, "--status", file)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "# ---- haproxy.cfg ----", "the bundle is printed as without --status")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, want, string(got))

	code, out, stderr = htc(t, "render", "-f", exampleConfig, "--state", exampleState, "--status", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, out, "the example writes no status without addresses")
}

func TestHelpAndVersion(t *testing.T) {
	for _, cmd := range []string{"validate", "render", "check"} {
		code, out, _ := htc(t, cmd, "--help")
		assert.Equal(t, exitOK, code)
		assert.Contains(t, out, "Usage: htc "+cmd)
		assert.Contains(t, out, "  -f, --config string ")
		assert.Contains(t, out, "  -h, --help ")
		assert.NotContains(t, out, "      --f ", "deprecated aliases are hidden")
	}
	code, out, _ := htc(t, "version")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "htc dev\n", out)
	code, out, _ = htc(t, "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "check")
}

// TestReadmeExample keeps the README's one-screen config honest: it is
// examples/minimal/config.yaml, and its embedded tests pass.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("../../examples/minimal/config.yaml")
	require.NoError(t, err)
	body := string(example)
	body = body[strings.Index(body, "apiVersion:"):]
	assert.Contains(t, string(readme), "```yaml\n"+body+"```", "README's template example differs from examples/minimal/config.yaml")

	code, out, stderr := htc(t, "validate", "-f", "../../examples/minimal/config.yaml")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "2/2 validation tests passed")
}

// htc render runs no check, so it works without haproxy; the commands that
// check say that haproxy is missing, in one line.
func TestRenderWithoutHAProxy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HTC_HAPROXY", "")
	code, out, stderr := htc(t, "render", "-f", exampleConfig, "--state", exampleState)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "backend default_echo_http")

	code, _, stderr = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress)
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, stderr, `haproxy binary "haproxy"`)
	assert.Equal(t, 1, strings.Count(strings.TrimRight(stderr, "\n"), "\n")+1, "one line on stderr: %q", stderr)
}

// An HAProxyTemplateConfig given as --object is judged as the config
// webhook judges a proposed config: rendered over the state, checked, its
// tests run.
func TestCheckProposedConfig(t *testing.T) {
	example, err := os.ReadFile(exampleConfig)
	require.NoError(t, err)
	same := writeFile(t, "same.yaml", string(example))
	code, out, stderr := htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", same)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "allowed\n", out)

	broken := strings.Replace(string(example), "      frontend http\n", "      frontend http\n        bogus-directive on\n", 1)
	require.NotEqual(t, string(example), broken)
	brokenFile := writeFile(t, "broken.yaml", broken)
	code, out, stderr = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", brokenFile)
	assert.Equal(t, exitRejected, code, stderr)
	assert.Regexp(t, `^denied: the proposed configuration fails over the current resources in the policy phase at haproxy\.cfg:\d+;`, out,
		"like the webhook, htc check says where, not what")
	code, out, _ = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", brokenFile, "--show-details")
	assert.Equal(t, exitRejected, code)
	assert.Regexp(t, `^denied: .*bogus-directive`, out, "--show-details prints the message")

	invalid := strings.Replace(string(example), `indexBy: ["metadata.namespace", "metadata.name"]`, "indexBy: []", 1)
	code, out, _ = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", writeFile(t, "invalid.yaml", invalid), "-o", "json")
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, `"allowed": false`)
	assert.Contains(t, out, "indexBy")
}

// A config can ask in spec.allowedDirectives only for what the operator
// grants with --allowed-directives (or HTC_ALLOWED_DIRECTIVES, which the
// flag replaces).
func TestAllowedDirectivesAreGrantedByTheOperator(t *testing.T) {
	example, err := os.ReadFile("../../examples/minimal/config.yaml")
	require.NoError(t, err)
	asks := writeFile(t, "asks.yaml", strings.Replace(string(example), "  haproxyConfig:", "  allowedDirectives: [lua-load]\n  haproxyConfig:", 1))
	require.NotEqual(t, string(example), string(mustRead(t, asks)))

	code, _, stderr := htc(t, "validate", "-f", asks)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `spec.allowedDirectives[0]: Forbidden: "lua-load" is not granted by the operator`)

	code, out, stderr := htc(t, "validate", "-f", asks, "--allowed-directives", "lua-load,setenv")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "validation tests passed")

	t.Setenv("HTC_ALLOWED_DIRECTIVES", "lua-load")
	code, _, _ = htc(t, "validate", "-f", asks)
	assert.Equal(t, exitOK, code, "the environment grants")
	code, _, stderr = htc(t, "validate", "-f", asks, "--allowed-directives", "setenv")
	assert.Equal(t, exitUsage, code, "the flag replaces the environment's grant")
	assert.Contains(t, stderr, "lua-load")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// htc check keeps the reports of the config's embedded tests: a second
// check of the same config does not run them again.
func TestCheckTestCache(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress, "--test-cache", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "allowed\n", out)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one report kept")
	// A broken report on disk: the tests run again, and the decision
	// stands.
	require.NoError(t, os.WriteFile(filepath.Join(dir, entries[0].Name()), []byte(`{"results":[],"passed":0,"total":1}`), 0o600))
	code, out, _ = htc(t, "check", "-f", exampleConfig, "--state", exampleState, "--object", goodIngress, "--test-cache", dir)
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "allowed\n", out)

	// A cached failing report denies like a fresh one.
	failing := strings.Replace(string(mustRead(t, exampleConfig)), "pattern: 'backend default_echo", "pattern: 'backend nowhere_echo", 1)
	require.NotEqual(t, string(mustRead(t, exampleConfig)), failing)
	cfg := writeFile(t, "failing.yaml", failing)
	for range 2 {
		code, out, _ = htc(t, "check", "-f", cfg, "--state", exampleState, "--object", goodIngress, "--test-cache", dir)
		assert.Equal(t, exitRejected, code)
		assert.Contains(t, out, "validation tests failed")
	}
}
