package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
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
yet". With --webhook-configuration, the controller fills that
ValidatingWebhookConfiguration's webhooks once it is ready (stores synced,
first live round done, certificate loaded), from the template in its
haproxy-template.io/webhook-template annotation, the config's rules and the
certificate's CA; it never creates it. On a clean stop it removes them when
its --deployment-name is scaled to zero or deleted (always without one).

With --leader-elect, the replicas elect a leader with the Lease
<config-name>-leader in --leader-election-namespace: all of them serve the
webhook and publish to their own HAProxy, only the leader writes the
config's status, its Events and the webhook registration; a stopping
leader releases the Lease. Without it, this process is the only writer.

The serving certificate comes from --webhook-cert-file and
--webhook-key-file (reread when they change) or from --webhook-cert-secret
(a kubernetes.io/tls Secret, watched for rotation; its ca.crt is the
registered caBundle, else the top of the served chain). Logs are JSON (log/slog)
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
	fs.StringVar(&opts.WebhookConfiguration, "webhook-configuration", envDefault("HTC_WEBHOOK_CONFIGURATION", ""), "ValidatingWebhookConfiguration whose webhooks the controller registers once it is ready (from its haproxy-template.io/webhook-template annotation; never created); empty: register nothing (env HTC_WEBHOOK_CONFIGURATION)")
	fs.StringVar(&opts.DeploymentName, "deployment-name", envDefault("HTC_DEPLOYMENT_NAME", ""), "the controller's Deployment in --config-namespace: a stopping replica removes the registered webhooks only when it is scaled to zero or deleted; empty: whenever it stops (env HTC_DEPLOYMENT_NAME)")
	le := leaderElectionFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := le.apply(&opts); err != nil {
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

// leaderElection holds the leader election flags until they are parsed.
type leaderElection struct {
	elect               *bool
	envErr              error // HTC_LEADER_ELECT is not a boolean
	namespace           *string
	lease, renew, retry *string
}

func leaderElectionFlags(fs *flag.FlagSet) *leaderElection {
	def, err := strconv.ParseBool(envDefault("HTC_LEADER_ELECT", "false"))
	if err != nil {
		err = usagef("HTC_LEADER_ELECT: %q is not true or false", os.Getenv("HTC_LEADER_ELECT"))
	}
	return &leaderElection{
		elect:     fs.Bool("leader-elect", def, "elect a leader among the replicas with a Lease: only the leader writes the config's status, its Events and the webhook registration (env HTC_LEADER_ELECT)"),
		envErr:    err,
		namespace: fs.String("leader-election-namespace", envDefault("HTC_LEADER_ELECTION_NAMESPACE", ""), "namespace of the Lease <config-name>-leader; empty means --config-namespace (env HTC_LEADER_ELECTION_NAMESPACE)"),
		lease:     fs.String("leader-elect-lease-duration", envDefault("HTC_LEADER_ELECT_LEASE_DURATION", controller.DefaultLeaseDuration.String()), "how long a leader that stopped renewing keeps the Lease (env HTC_LEADER_ELECT_LEASE_DURATION)"),
		renew:     fs.String("leader-elect-renew-deadline", envDefault("HTC_LEADER_ELECT_RENEW_DEADLINE", controller.DefaultRenewDeadline.String()), "how long the leader tries to renew the Lease before it stops leading (env HTC_LEADER_ELECT_RENEW_DEADLINE)"),
		retry:     fs.String("leader-elect-retry-period", envDefault("HTC_LEADER_ELECT_RETRY_PERIOD", controller.DefaultRetryPeriod.String()), "how often the replicas try to acquire or renew the Lease (env HTC_LEADER_ELECT_RETRY_PERIOD)"),
	}
}

// apply puts the parsed leader election flags into opts.
func (le *leaderElection) apply(opts *controller.Options) error {
	if le.envErr != nil {
		return le.envErr
	}
	opts.LeaderElection, opts.LeaderElectionNamespace = *le.elect, *le.namespace
	var err error
	for _, d := range []struct {
		name string
		v    *string
		to   *time.Duration
	}{{"leader-elect-lease-duration", le.lease, &opts.LeaseDuration}, {"leader-elect-renew-deadline", le.renew, &opts.RenewDeadline}, {"leader-elect-retry-period", le.retry, &opts.RetryPeriod}} {
		if *d.to, err = positiveDuration(d.name, *d.v); err != nil {
			return err
		}
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
