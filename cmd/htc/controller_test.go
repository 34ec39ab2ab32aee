package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControllerHelpDocumentsEveryFlag(t *testing.T) {
	code, stdout, _ := htc(t, "controller", "--help")
	assert.Equal(t, exitOK, code)
	for flag, env := range map[string]string{
		"kubeconfig":                "KUBECONFIG",
		"config-namespace":          "HTC_CONFIG_NAMESPACE",
		"config-name":               "HTC_CONFIG_NAME",
		"watch-namespace":           "HTC_WATCH_NAMESPACE",
		"webhook-port":              "HTC_WEBHOOK_PORT",
		"webhook-cert-file":         "HTC_WEBHOOK_CERT_FILE",
		"webhook-key-file":          "HTC_WEBHOOK_KEY_FILE",
		"webhook-cert-secret":       "HTC_WEBHOOK_CERT_SECRET",
		"webhook-client-ca-file":    "HTC_WEBHOOK_CLIENT_CA_FILE",
		"metrics-bind-address":      "HTC_METRICS_BIND_ADDRESS",
		"health-probe-bind-address": "HTC_HEALTH_PROBE_BIND_ADDRESS",
		"pprof":                     "HTC_PPROF",
		"memory-limit":              "HTC_MEMORY_LIMIT",
		"gc-percent":                "HTC_GC_PERCENT",
		"idle-memory-return":        "HTC_IDLE_MEMORY_RETURN",
		"full-render":               "HTC_FULL_RENDER",
		"shortcut-check-every":      "HTC_SHORTCUT_CHECK_EVERY",
		"shortcut-check-when-idle":  "HTC_SHORTCUT_CHECK_WHEN_IDLE",
		"webhook-bind-address":      "HTC_WEBHOOK_BIND_ADDRESS",
		"output-dir":                "HTC_OUTPUT_DIR",
		"haproxy-master-socket":     "HTC_HAPROXY_MASTER_SOCKET",
		"allowed-directives":        "HTC_ALLOWED_DIRECTIVES",
		"debounce":                  "HTC_DEBOUNCE",
		"max-delay":                 "HTC_MAX_DELAY",
		"haproxy-runtime-api":       "HTC_HAPROXY_RUNTIME_API",
		"haproxy-reload-interval":   "HTC_HAPROXY_RELOAD_INTERVAL",
		"runtime-check-every":       "HTC_RUNTIME_CHECK_EVERY",
		"log-level":                 "HTC_LOG_LEVEL",
		"log-format":                "HTC_LOG_FORMAT",
	} {
		assert.Regexp(t, `(?m)^      --`+flag+` (string|strings)?  .*\(env `+env+`\)`, stdout, "--%s, with its environment variable", flag)
	}
	_, flags, _ := strings.Cut(stdout, "\nFlags:\n")
	for _, old := range []string{"metrics-addr", "health-addr"} {
		assert.NotContains(t, flags, "--"+old+" ", "deprecated aliases are hidden")
	}
	assert.Contains(t, stdout, `(default "9443")`)
	assert.Contains(t, stdout, `(default ":9090")`)
	assert.Contains(t, stdout, `(default ":8081")`)
	assert.Contains(t, stdout, `(default "20ms")`)
	assert.Contains(t, stdout, `(default "1s")`)
	assert.Regexp(t, `(?m)^      --idle-memory-return string .*\(default "15s"\)$`, stdout)
	assert.Regexp(t, `(?m)^      --shortcut-check-every string .*0: never by count.*\(default "100"\)$`, stdout)
	assert.Regexp(t, `(?m)^      --shortcut-check-when-idle .*\(default true\)$`, stdout)
	assert.Regexp(t, `(?m)^      --haproxy-runtime-api .*\(default true\)$`, stdout)
	assert.Regexp(t, `(?m)^      --haproxy-reload-interval string .*\(default "2s"\)$`, stdout)
	assert.Regexp(t, `(?m)^      --runtime-check-every string .*0: only when idle.*\(default "10"\)$`, stdout)
	assert.Contains(t, stdout, `(default "info")`)
	assert.Contains(t, stdout, `(default "json")`)
	assert.Contains(t, stdout, "htc is starting: stores not synced")
	assert.Contains(t, stdout, "haproxy -W -S SOCKET -f DIR/haproxy.cfg", "--help says how HAProxy must run to be reloaded")
}

func TestControllerMissingInputExitsTwoWithOneLine(t *testing.T) {
	unsetEnv(t, "HTC_CONFIG_NAMESPACE", "HTC_CONFIG_NAME", "HTC_WEBHOOK_PORT", "HTC_WEBHOOK_CERT_FILE", "HTC_WEBHOOK_KEY_FILE", "HTC_WEBHOOK_CERT_SECRET",
		"HTC_WEBHOOK_BIND_ADDRESS", "HTC_OUTPUT_DIR", "HTC_HAPROXY_MASTER_SOCKET", "HTC_DEBOUNCE", "HTC_MAX_DELAY", "HTC_PPROF", "HTC_IDLE_MEMORY_RETURN",
		"HTC_WATCH_NAMESPACE", "HTC_LOG_LEVEL", "HTC_LOG_FORMAT", "HTC_METRICS_BIND_ADDRESS", "HTC_METRICS_ADDR", "HTC_SHORTCUT_CHECK_EVERY",
		"HTC_HAPROXY_RELOAD_INTERVAL", "HTC_RUNTIME_CHECK_EVERY", "HTC_HAPROXY_RUNTIME_API")
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
		{"output dir a configuration cannot name", append(valid, "--output-dir", "/etc/haproxy#live"), `--output-dir: directory "/etc/haproxy#live": '#' in its path`},
		{"bad debounce", append(valid, "--debounce", "soon"), `--debounce: "soon" is not a positive duration`},
		{"bad idle memory return", append(valid, "--idle-memory-return", "-1s"), `--idle-memory-return: "-1s" is not a duration of 1s or more (e.g. 15s), or 0 for never`},
		{"bad shortcut check count", append(valid, "--shortcut-check-every", "-1"), `--shortcut-check-every: "-1" is not a number of live renders (e.g. 100), or 0 for never by count`},
		{"bad reload interval", append(valid, "--haproxy-reload-interval", "-1s"), `--haproxy-reload-interval: "-1s" is not a duration of 0 or more (e.g. 2s)`},
		{"bad runtime check count", append(valid, "--runtime-check-every", "often"), `--runtime-check-every: "often" is not a number of rounds (e.g. 10), or 0 for only when idle`},
		{"zero max delay", append(valid, "--max-delay", "0s"), `--max-delay: "0s" is not a positive duration`},
		{"max delay below debounce", append(valid, "--debounce", "2s", "--max-delay", "1s"), "--max-delay (1s) must not be shorter than --debounce (2s)"},
		{"pprof without metrics", append(valid, "--pprof", "--metrics-bind-address="), "--pprof needs --metrics-bind-address"},
		{"bad watch namespace", append(valid, "--watch-namespace", "team-a,Team_B"), `--watch-namespace: "Team_B" is not a namespace name`},
		{"bad log level", append(valid, "--log-level", "verbose"), `--log-level: "verbose" is not one of debug, info, warn, error`},
		{"bad log format", append(valid, "--log-format", "logfmt"), `--log-format: "logfmt" is not one of json, text`},
		{"bad boolean", append(valid, "--pprof=maybe"), `invalid argument "maybe" for "--pprof" flag`},
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

	t.Setenv("HTC_PPROF", "sometimes")
	code, _, stderr = htc(t, "controller")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `HTC_PPROF: "sometimes" is not a boolean`)
}

// The controller's flags as they reach controller.Options: new names,
// deprecated aliases (flags and environment variables) and the forms
// earlier releases accepted.
func TestControllerFlagsToOptions(t *testing.T) {
	base := []string{"--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "a/b"}
	for _, tc := range []struct {
		name                    string
		env                     map[string]string
		args                    []string
		metrics, health         string
		namespaces              []string
		pprof                   bool
		notice                  string // on stderr
		logLevel, logFormat     string
		wantWebhookAddr, wantNS string
	}{
		{name: "defaults", metrics: ":9090", health: ":8081", logLevel: "info", logFormat: "json"},
		{name: "new names", args: []string{"--metrics-bind-address", "127.0.0.1:1", "--health-probe-bind-address=127.0.0.1:2", "--pprof", "--watch-namespace", "a,b", "--watch-namespace", "c,a", "--log-level", "debug", "--log-format", "text"},
			metrics: "127.0.0.1:1", health: "127.0.0.1:2", pprof: true, namespaces: []string{"a", "b", "c"}, logLevel: "debug", logFormat: "text"},
		{name: "deprecated flags", args: []string{"--metrics-addr", "127.0.0.1:1", "--health-addr=127.0.0.1:2"},
			metrics: "127.0.0.1:1", health: "127.0.0.1:2", logLevel: "info", logFormat: "json", notice: "Flag --metrics-addr has been deprecated, use --metrics-bind-address instead"},
		{name: "one dash", args: []string{"-metrics-addr", "127.0.0.1:1", "-health-probe-bind-address=127.0.0.1:2"},
			metrics: "127.0.0.1:1", health: "127.0.0.1:2", logLevel: "info", logFormat: "json", notice: "Flag -health-probe-bind-address: one dash is deprecated, use --health-probe-bind-address"},
		{name: "environment", env: map[string]string{"HTC_METRICS_BIND_ADDRESS": "127.0.0.1:1", "HTC_HEALTH_PROBE_BIND_ADDRESS": "", "HTC_PPROF": "true", "HTC_WATCH_NAMESPACE": "x,y", "HTC_LOG_LEVEL": "warn", "HTC_LOG_FORMAT": "text"},
			metrics: "127.0.0.1:1", health: "", pprof: true, namespaces: []string{"x", "y"}, logLevel: "warn", logFormat: "text"},
		{name: "renamed environment", env: map[string]string{"HTC_METRICS_ADDR": "127.0.0.1:1", "HTC_HEALTH_ADDR": "127.0.0.1:2"},
			metrics: "127.0.0.1:1", health: "127.0.0.1:2", logLevel: "info", logFormat: "json", notice: "Environment variable HTC_METRICS_ADDR is deprecated, use HTC_METRICS_BIND_ADDRESS instead"},
		{name: "flag over environment", env: map[string]string{"HTC_WATCH_NAMESPACE": "x"}, args: []string{"--watch-namespace=z"},
			metrics: ":9090", health: ":8081", namespaces: []string{"z"}, logLevel: "info", logFormat: "json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, "HTC_METRICS_BIND_ADDRESS", "HTC_METRICS_ADDR", "HTC_HEALTH_PROBE_BIND_ADDRESS", "HTC_HEALTH_ADDR", "HTC_PPROF",
				"HTC_WATCH_NAMESPACE", "HTC_LOG_LEVEL", "HTC_LOG_FORMAT", "HTC_WEBHOOK_PORT", "HTC_WEBHOOK_BIND_ADDRESS")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr strings.Builder
			fs := newFlagSet("controller", "", "", &stdout, &stderr)
			f := defineControllerFlags(fs, &stderr)
			require.NoError(t, parse(fs, append(append([]string{}, base...), tc.args...)))
			opts, err := f.options()
			require.NoError(t, err)
			assert.Equal(t, tc.metrics, opts.MetricsAddr)
			assert.Equal(t, tc.health, opts.HealthAddr)
			assert.Equal(t, tc.pprof, opts.Pprof)
			assert.Equal(t, tc.namespaces, opts.WatchNamespaces)
			assert.Equal(t, ":9443", opts.WebhookAddr)
			assert.Equal(t, tc.logLevel, f.logs.level)
			assert.Equal(t, tc.logFormat, f.logs.format)
			if tc.notice != "" {
				assert.Contains(t, stderr.String(), tc.notice)
			} else {
				assert.Empty(t, stderr.String())
			}
			assert.Empty(t, stdout.String())
		})
	}
}

// --haproxy-runtime-api, --haproxy-reload-interval and
// --runtime-check-every as they reach controller.Options: 0s never
// paces and 0 compares only when idle (negative options), and reload-only
// compares nothing.
func TestDataPlaneFlags(t *testing.T) {
	base := []string{"--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "a/b"}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		reloadOnly bool
		interval   time.Duration
		every      int
	}{
		{name: "defaults", interval: 2 * time.Second, every: 10},
		{name: "reload only", args: []string{"--haproxy-runtime-api=false"}, reloadOnly: true, interval: 2 * time.Second, every: -1},
		{name: "never paced, only when idle", args: []string{"--haproxy-reload-interval", "0s", "--runtime-check-every=0"}, interval: -1, every: -1},
		{name: "environment", env: map[string]string{"HTC_HAPROXY_RELOAD_INTERVAL": "500ms", "HTC_RUNTIME_CHECK_EVERY": "3"}, interval: 500 * time.Millisecond, every: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, "HTC_HAPROXY_RUNTIME_API", "HTC_HAPROXY_RELOAD_INTERVAL", "HTC_RUNTIME_CHECK_EVERY")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr strings.Builder
			fs := newFlagSet("controller", "", "", &stdout, &stderr)
			f := defineControllerFlags(fs, &stderr)
			require.NoError(t, parse(fs, append(append([]string{}, base...), tc.args...)))
			opts, err := f.options()
			require.NoError(t, err)
			assert.Equal(t, tc.reloadOnly, opts.ReloadOnly)
			assert.Equal(t, tc.interval, opts.ReloadInterval)
			assert.Equal(t, tc.every, opts.RuntimeCheckEvery)
		})
	}
}

// --shortcut-check-every and --shortcut-check-when-idle as they reach
// controller.Options: 0 checks never by count (a negative option), and
// without an idle memory return there are no idle periods to check in.
func TestShortcutCheckFlags(t *testing.T) {
	base := []string{"--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "a/b"}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		every    int
		whenIdle bool
	}{
		{name: "defaults", every: 100, whenIdle: true},
		{name: "every 1, never when idle", args: []string{"--shortcut-check-every", "1", "--shortcut-check-when-idle=false"}, every: 1},
		{name: "never by count", args: []string{"--shortcut-check-every=0"}, every: -1, whenIdle: true},
		{name: "environment", env: map[string]string{"HTC_SHORTCUT_CHECK_EVERY": "7", "HTC_SHORTCUT_CHECK_WHEN_IDLE": "false"}, every: 7},
		{name: "no idle memory return, no idle checks", args: []string{"--idle-memory-return", "0"}, every: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, "HTC_SHORTCUT_CHECK_EVERY", "HTC_SHORTCUT_CHECK_WHEN_IDLE", "HTC_IDLE_MEMORY_RETURN")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr strings.Builder
			fs := newFlagSet("controller", "", "", &stdout, &stderr)
			f := defineControllerFlags(fs, &stderr)
			require.NoError(t, parse(fs, append(append([]string{}, base...), tc.args...)))
			opts, err := f.options()
			require.NoError(t, err)
			assert.Equal(t, tc.every, opts.ShortcutCheckEvery)
			assert.Equal(t, tc.whenIdle, opts.ShortcutCheckWhenIdle)
		})
	}
}

// Flags of earlier releases keep working in every command.
func TestDeprecatedFlagForms(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "--f", "../../examples/minimal/config.yaml", "--o", "json"},
		{"validate", "-config", "../../examples/minimal/config.yaml", "-o=json"},
		{"validate", "--config=../../examples/minimal/config.yaml", "-ojson"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := htc(t, args...)
			require.Equal(t, exitOK, code, stderr)
			assert.Contains(t, out, `"passed": 2`)
		})
	}
}

func TestSingleDashLongFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	fs.StringP("config", "f", "", "")
	fs.String("state", "", "")
	fs.Bool("pprof", false, "")
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"-config", "x", "-state=y"}, []string{"--config", "x", "--state=y"}},
		{[]string{"-f", "-state"}, []string{"-f", "-state"}},                       // -state is -f's value
		{[]string{"--state", "-config"}, []string{"--state", "-config"}},           // and --state's
		{[]string{"-pprof", "-config", "c"}, []string{"--pprof", "--config", "c"}}, // a boolean takes no value
		{[]string{"-fx", "-unknown", "--", "-config"}, []string{"-fx", "-unknown", "--", "-config"}},
	} {
		assert.Equal(t, tc.want, singleDashLongFlags(fs, tc.in), "%v", tc.in)
	}
	assert.Contains(t, out.String(), "Flag -config: one dash is deprecated, use --config")
}

// unsetEnv unsets the variables for the test (restored afterwards).
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		require.NoError(t, os.Unsetenv(n))
	}
}

// --shutdown-delay (and HTC_SHUTDOWN_DELAY) becomes Options.ShutdownDelay;
// a negative or unparsable one is a usage error naming the flag.
func TestControllerShutdownDelayFlag(t *testing.T) {
	base := []string{"--config-namespace", "ns", "--config-name", "n", "--webhook-cert-secret", "a/b"}
	for _, tc := range []struct {
		name    string
		env     string
		args    []string
		want    time.Duration
		wantErr string
	}{
		{name: "default stops at once", want: 0},
		{name: "flag", args: []string{"--shutdown-delay=5s"}, want: 5 * time.Second},
		{name: "environment", env: "2s", want: 2 * time.Second},
		{name: "negative", args: []string{"--shutdown-delay=-1s"}, wantErr: `--shutdown-delay: "-1s" is not a duration of 0 or more`},
		{name: "not a duration", args: []string{"--shutdown-delay=soon"}, wantErr: `--shutdown-delay: "soon" is not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, "HTC_SHUTDOWN_DELAY")
			if tc.env != "" {
				t.Setenv("HTC_SHUTDOWN_DELAY", tc.env)
			}
			var stdout, stderr strings.Builder
			fs := newFlagSet("controller", "", "", &stdout, &stderr)
			f := defineControllerFlags(fs, &stderr)
			require.NoError(t, parse(fs, append(append([]string{}, base...), tc.args...)))
			opts, err := f.options()
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, opts.ShutdownDelay)
		})
	}
}
