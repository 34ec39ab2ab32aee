package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/haproxy-template/htc/pkg/controller"
)

const controllerDescription = `Runs the controller out of or in a cluster: loads the HAProxyTemplateConfig
named by --config-namespace/--config-name, watches every resource it lists,
and serves the dry-run validating admission webhook on https://:PORT/validate.
A config change is applied without a restart; a config that does not
validate is logged and the last good one keeps serving.

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
	port := fs.String("webhook-port", envDefault("HTC_WEBHOOK_PORT", "9443"), "HTTPS port of the webhook (/validate, /healthz), on all interfaces (env HTC_WEBHOOK_PORT)")
	fs.StringVar(&opts.CertFile, "webhook-cert-file", envDefault("HTC_WEBHOOK_CERT_FILE", ""), "PEM serving certificate (chain) of the webhook; with --webhook-key-file (env HTC_WEBHOOK_CERT_FILE)")
	fs.StringVar(&opts.KeyFile, "webhook-key-file", envDefault("HTC_WEBHOOK_KEY_FILE", ""), "PEM private key of --webhook-cert-file (env HTC_WEBHOOK_KEY_FILE)")
	fs.StringVar(&opts.CertSecret, "webhook-cert-secret", envDefault("HTC_WEBHOOK_CERT_SECRET", ""), "namespace/name of a kubernetes.io/tls Secret holding the serving certificate, instead of the files (env HTC_WEBHOOK_CERT_SECRET)")
	fs.StringVar(&opts.ClientCAFile, "webhook-client-ca-file", envDefault("HTC_WEBHOOK_CLIENT_CA_FILE", ""), "PEM CA bundle; when set, clients (the API server) must present a certificate it signed (env HTC_WEBHOOK_CLIENT_CA_FILE)")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", envDefault("HTC_METRICS_ADDR", controller.DefaultMetricsAddr), "listen address of the Prometheus /metrics endpoint (plain HTTP); empty disables it (env HTC_METRICS_ADDR)")
	fs.StringVar(&opts.HealthAddr, "health-addr", envDefault("HTC_HEALTH_ADDR", controller.DefaultHealthAddr), "listen address of /healthz and /readyz (plain HTTP); empty disables it (env HTC_HEALTH_ADDR)")
	if err := parse(fs, args); err != nil {
		return err
	}
	p, err := strconv.Atoi(*port)
	if err != nil || p < 1 || p > 65535 {
		return usagef("--webhook-port: %q is not a port number (1-65535)", *port)
	}
	opts.WebhookAddr = ":" + strconv.Itoa(p)
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
