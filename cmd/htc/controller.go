package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/haproxy-template/htc/pkg/controller"
)

const controllerDescription = `Runs the controller out of or in a cluster: loads the HAProxyTemplateConfig
named by --config-namespace/--config-name, watches every resource it lists,
and serves the dry-run validating admission webhook on https://:PORT/validate.
A config change is applied without a restart; a config that does not
validate is logged and reported as a Warning Event on it, and the last good
one keeps serving.

The live configuration (the config's templates over the current resources)
is rendered and checked like an admission whenever a watched resource or
the config changes, debounced: a change is rendered once the changes paused
for --debounce, and at most --max-delay after it arrived. Its outcome is
the Valid condition on the HAProxyTemplateConfig, an Event, a log line and
the htc_live_config_valid metric. With --output-dir, a configuration that
passed is written there (haproxy.cfg, maps/, files/, certs/; each file
replaced atomically) and, with --haproxy-master-socket, HAProxy (started as
haproxy -W -S SOCKET -f DIR/haproxy.cfg) is reloaded through its master CLI
and the reload verified (condition Published); the reload is skipped when
no file changed, and a reload HAProxy refuses puts the previous files back.
A configuration that fails is never written: HAProxy keeps the last good one.

Until the stores of the first good config synced, /readyz answers 503 and
every admission request is denied with "htc is starting: stores not synced
yet". The serving certificate comes from --webhook-cert-file and
--webhook-key-file (reread when they change) or from --webhook-cert-secret
(a kubernetes.io/tls Secret, watched for rotation). Logs are JSON (log/slog)
on stderr. Each flag's default can be set with the environment variable named
in its description.`

func runController(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("controller", "htc controller --config-namespace NS --config-name NAME (--webhook-cert-file F --webhook-key-file F | --webhook-cert-secret NS/NAME) [flags]", controllerDescription, stdout)
	var opts controller.Options
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig file; empty means in-cluster config, then ~/.kube/config (env KUBECONFIG)")
	fs.StringVar(&opts.ConfigNamespace, "config-namespace", envDefault("HTC_CONFIG_NAMESPACE", ""), "namespace of the HAProxyTemplateConfig; required (env HTC_CONFIG_NAMESPACE)")
	fs.StringVar(&opts.ConfigName, "config-name", envDefault("HTC_CONFIG_NAME", ""), "name of the HAProxyTemplateConfig; required (env HTC_CONFIG_NAME)")
	port := fs.String("webhook-port", envDefault("HTC_WEBHOOK_PORT", "9443"), "HTTPS port of the webhook (/validate, /healthz) (env HTC_WEBHOOK_PORT)")
	bindAddr := fs.String("webhook-bind-address", envDefault("HTC_WEBHOOK_BIND_ADDRESS", ""), "IP address the webhook listens on; empty means all interfaces (env HTC_WEBHOOK_BIND_ADDRESS)")
	fs.StringVar(&opts.CertFile, "webhook-cert-file", envDefault("HTC_WEBHOOK_CERT_FILE", ""), "PEM serving certificate (chain) of the webhook; with --webhook-key-file (env HTC_WEBHOOK_CERT_FILE)")
	fs.StringVar(&opts.KeyFile, "webhook-key-file", envDefault("HTC_WEBHOOK_KEY_FILE", ""), "PEM private key of --webhook-cert-file (env HTC_WEBHOOK_KEY_FILE)")
	fs.StringVar(&opts.CertSecret, "webhook-cert-secret", envDefault("HTC_WEBHOOK_CERT_SECRET", ""), "namespace/name of a kubernetes.io/tls Secret holding the serving certificate, instead of the files (env HTC_WEBHOOK_CERT_SECRET)")
	fs.StringVar(&opts.ClientCAFile, "webhook-client-ca-file", envDefault("HTC_WEBHOOK_CLIENT_CA_FILE", ""), "PEM CA bundle; when set, clients (the API server) must present a certificate it signed (env HTC_WEBHOOK_CLIENT_CA_FILE)")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", envDefault("HTC_METRICS_ADDR", controller.DefaultMetricsAddr), "listen address of the Prometheus /metrics endpoint (plain HTTP); empty disables it (env HTC_METRICS_ADDR)")
	fs.StringVar(&opts.HealthAddr, "health-addr", envDefault("HTC_HEALTH_ADDR", controller.DefaultHealthAddr), "listen address of /healthz and /readyz (plain HTTP); empty disables it (env HTC_HEALTH_ADDR)")
	fs.StringVar(&opts.OutputDir, "output-dir", envDefault("HTC_OUTPUT_DIR", ""), "publish the checked live configuration here: DIR/haproxy.cfg, with maps, files and certificates beside it; empty: only validate (env HTC_OUTPUT_DIR)")
	fs.StringVar(&opts.MasterSocket, "haproxy-master-socket", envDefault("HTC_HAPROXY_MASTER_SOCKET", ""), "HAProxy master CLI socket (haproxy -W -S PATH) to reload through after a publish; needs --output-dir (env HTC_HAPROXY_MASTER_SOCKET)")
	allowed := allowedDirectivesFlag(fs)
	debounce := fs.String("debounce", envDefault("HTC_DEBOUNCE", controller.DefaultDebounce.String()), "quiet period after a change before the live configuration is rendered (env HTC_DEBOUNCE)")
	maxDelay := fs.String("max-delay", envDefault("HTC_MAX_DELAY", controller.DefaultMaxDelay.String()), "longest a stream of changes can postpone rendering the live configuration (env HTC_MAX_DELAY)")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts.AllowedDirectives = allowed.stringList
	p, err := strconv.Atoi(*port)
	if err != nil || p < 1 || p > 65535 {
		return usagef("--webhook-port: %q is not a port number (1-65535)", *port)
	}
	if *bindAddr != "" && net.ParseIP(*bindAddr) == nil {
		return usagef("--webhook-bind-address: %q is not an IP address", *bindAddr)
	}
	opts.WebhookAddr = net.JoinHostPort(*bindAddr, strconv.Itoa(p))
	if opts.Debounce, err = positiveDuration("debounce", *debounce); err != nil {
		return err
	}
	if opts.MaxDelay, err = positiveDuration("max-delay", *maxDelay); err != nil {
		return err
	}
	if opts.MaxDelay < opts.Debounce {
		return usagef("--max-delay (%s) must not be shorter than --debounce (%s)", opts.MaxDelay, opts.Debounce)
	}
	if opts.MasterSocket != "" && opts.OutputDir == "" {
		return usagef("--haproxy-master-socket needs --output-dir: HAProxy is reloaded after the configuration was written there")
	}
	switch {
	case opts.ConfigNamespace == "":
		return usagef("--config-namespace (or HTC_CONFIG_NAMESPACE) is required (see 'htc controller --help')")
	case opts.ConfigName == "":
		return usagef("--config-name (or HTC_CONFIG_NAME) is required (see 'htc controller --help')")
	case opts.CertSecret != "" && (opts.CertFile != "" || opts.KeyFile != ""):
		return usagef("set either --webhook-cert-file/--webhook-key-file or --webhook-cert-secret, not both")
	case opts.CertSecret == "" && opts.CertFile == "" && opts.KeyFile == "":
		return usagef("a serving certificate is required: --webhook-cert-file and --webhook-key-file, or --webhook-cert-secret (see 'htc controller --help')")
	case opts.CertSecret == "" && (opts.CertFile == "" || opts.KeyFile == ""):
		return usagef("--webhook-cert-file and --webhook-key-file must be set together")
	}
	if err := opts.Validate(); err != nil {
		return usageError{err}
	}
	opts.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := controller.Run(ctx, opts); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}

// positiveDuration parses a flag's duration ("250ms", "2s"), which must be > 0.
func positiveDuration(flagName, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, usagef("--%s: %q is not a positive duration (e.g. 100ms, 2s)", flagName, v)
	}
	return d, nil
}
