package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/haproxy-template/htc/internal/memreturn"
	"github.com/haproxy-template/htc/pkg/controller"
	"github.com/haproxy-template/htc/pkg/haproxy"
)

const controllerDescription = `Runs the controller out of or in a cluster: loads the HAProxyTemplateConfig
named by --config-namespace/--config-name, watches every resource it lists
(in the namespaces of --watch-namespace, or all), and serves the dry-run
validating admission webhook on https://:PORT/validate. A config change is
applied without a restart; a config that does not validate is logged and
reported as a Warning Event on it, and the last good one keeps serving.

The live configuration (the config's templates over the current resources)
is rendered and checked like an admission whenever a watched resource or
the config changes, debounced: a change is rendered once the changes paused
for --debounce (and no admission is being checked), and at most --max-delay
after it arrived. Its outcome is the Valid condition on the HAProxyTemplateConfig, an Event, a log line and
the htc_live_config_valid metric. With --output-dir, a configuration that
passed is written there (haproxy.cfg, maps/, files/, certs/; each file
replaced atomically) and, with --haproxy-master-socket, HAProxy (started as
haproxy -W -S SOCKET -f DIR/haproxy.cfg) runs it: a change its runtime API
can make as a reload would (servers added, removed or changed in a
roundrobin, leastconn or random backend, the content of maps and
certificates; see the README) is applied through the master CLI without a
reload, anything else reloads HAProxy, at most once per
--haproxy-reload-interval, and the reload is verified (condition Published
says which). Nothing is done when no file changed; a reload HAProxy refuses
puts the previous files back; a runtime command that fails reloads. What
HAProxy runs is compared with the files every --runtime-check-every rounds
applied at run time and when idle (condition RuntimeVerified); a difference
is repaired by a reload. --haproxy-runtime-api=false reloads for every
change. A configuration that fails is never written: HAProxy keeps the last
good one.
When the HAProxy reloaded through the socket runs another version than the
one that checks (haproxy -v), the HAProxyVersionSkew condition and the
htc_haproxy_version_skew metric say so.

The controller checks its own shortcuts against the full computation at
run time, at low priority (when idle, see --shortcut-check-when-idle, and
at least every --shortcut-check-every live rounds; work interrupts a check
and it runs again later): the live state rendered in full against the
incremental render it published, haproxy -c run again on a bundle accepted
through the map-only skip, the state with and without a change admitted
without rendering. A mismatch is logged (the shortcut, the output, line and
object, never their content), counted (htc_shortcut_mismatch_total), sets
the ShortcutsVerified condition False, and turns that shortcut off until the
controller restarts: the live configuration is rendered and checked again
in full, and so is every admission after it.

Until the stores of the first good config synced, /readyz answers 503 and
every admission request is denied with "htc is starting: stores not synced
yet". With --webhook-configuration, the controller fills that
ValidatingWebhookConfiguration's webhooks once it is ready (stores synced,
first live round done, certificate loaded), from the template in its
haproxy-template.io/webhook-template annotation, the config's rules and the
certificate's CA; it never creates it. On a clean stop it removes them when
its --deployment-name is scaled to zero or deleted (always without one).

On SIGTERM, with --shutdown-delay, the controller first goes on serving
that long with /readyz answering 503, so that the endpoints of its webhook
Service drop it before it closes its listeners.

With --leader-elect, the replicas elect a leader with the Lease
<config-name>-leader in --leader-election-namespace: all of them serve the
webhook and publish to their own HAProxy, only the leader writes the
config's status, its Events and the webhook registration; a stopping
leader releases the Lease. Without it, this process is the only writer.

The serving certificate comes from --webhook-cert-file and
--webhook-key-file (reread when they change) or from --webhook-cert-secret
(a kubernetes.io/tls Secret, watched for rotation; its ca.crt is the
registered caBundle, else the top of the served chain). Logs (log/slog, client-go's
included) go to stderr as JSON or text (--log-format) from --log-level up.
Each flag's default can be set with the environment variable named in its
description. --metrics-addr and --health-addr (and HTC_METRICS_ADDR,
HTC_HEALTH_ADDR) still work for one release: use --metrics-bind-address and
--health-probe-bind-address.`

// controllerFlags are the flags of htc controller that need converting
// into controller.Options.
type controllerFlags struct {
	opts                controller.Options
	port, bindAddr      string
	debounce, maxDelay  string
	allowed, namespaces *defaultedList
	logs                *logFlags
	envErr              error // an environment default that does not parse
	// the leader election's durations
	leaseDuration, renewDeadline, retryPeriod string
	// memLimit is --memory-limit (see memoryLimit).
	memLimit string
	// gcPercent is --gc-percent (see gcPercent).
	gcPercent string
	// idleMemoryReturn is --idle-memory-return.
	idleMemoryReturn string
	// shutdownDelay is --shutdown-delay.
	shutdownDelay string
	// shortcutCheckEvery is --shortcut-check-every.
	shortcutCheckEvery string
	// runtimeAPI, reloadInterval and runtimeCheckEvery are
	// --haproxy-runtime-api, --haproxy-reload-interval and
	// --runtime-check-every.
	runtimeAPI                        bool
	reloadInterval, runtimeCheckEvery string
}

func runController(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("controller", "htc controller --config-namespace NS --config-name NAME (--webhook-cert-file F --webhook-key-file F | --webhook-cert-secret NS/NAME) [flags]", controllerDescription, stdout, stderr)
	f := defineControllerFlags(fs, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	limit, limitFrom, err := memoryLimit(f.memLimit, os.Getenv("GOMEMLIMIT"), cgroupRoot)
	if err != nil {
		return err
	}
	gcTarget, gcFrom, err := gcPercent(f.gcPercent, os.Getenv("GOGC"))
	if err != nil {
		return err
	}
	if opts.Logger, err = f.logs.setUp(stderr); err != nil {
		return err
	}
	applyMemoryLimit(limit)
	opts.Logger.Info("memory limit of the Go runtime", "bytes", limit, "from", limitFrom)
	applyGCPercent(gcTarget)
	opts.Logger.Info("garbage collector target of the Go runtime", "percent", gcTarget, "from", gcFrom)
	b := currentBuild()
	opts.Build = controller.BuildInfo{Version: b.Version, Revision: b.Revision, GoVersion: b.GoVersion}
	if err := controller.Run(ctx, opts); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}

// defineControllerFlags defines the flags of htc controller on fs; their
// defaults come from the environment. Renamed environment variables are
// still read, with a notice on stderr.
func defineControllerFlags(fs *pflag.FlagSet, stderr io.Writer) *controllerFlags {
	f := &controllerFlags{}
	o := &f.opts
	fs.StringVar(&o.Kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig file; empty means in-cluster config, then ~/.kube/config (env KUBECONFIG)")
	fs.StringVar(&o.ConfigNamespace, "config-namespace", envDefault("HTC_CONFIG_NAMESPACE", ""), "namespace of the HAProxyTemplateConfig; required (env HTC_CONFIG_NAMESPACE)")
	fs.StringVar(&o.ConfigName, "config-name", envDefault("HTC_CONFIG_NAME", ""), "name of the HAProxyTemplateConfig; required (env HTC_CONFIG_NAME)")
	f.namespaces = newDefaultedList(envDefault("HTC_WATCH_NAMESPACE", ""))
	fs.Var(f.namespaces, "watch-namespace", "watch namespaced resources only in these namespaces (comma-separated or repeated); empty: all namespaces. Cluster-scoped resources are watched whole; the registered webhooks match only these namespaces, and a change of an object in another namespace is admitted without a check (env HTC_WATCH_NAMESPACE)")
	fs.StringVar(&f.port, "webhook-port", envDefault("HTC_WEBHOOK_PORT", "9443"), "HTTPS port of the webhook (/validate, /healthz) (env HTC_WEBHOOK_PORT)")
	fs.StringVar(&f.bindAddr, "webhook-bind-address", envDefault("HTC_WEBHOOK_BIND_ADDRESS", ""), "IP address the webhook listens on; empty means all interfaces (env HTC_WEBHOOK_BIND_ADDRESS)")
	fs.StringVar(&o.CertFile, "webhook-cert-file", envDefault("HTC_WEBHOOK_CERT_FILE", ""), "PEM serving certificate (chain) of the webhook; with --webhook-key-file (env HTC_WEBHOOK_CERT_FILE)")
	fs.StringVar(&o.KeyFile, "webhook-key-file", envDefault("HTC_WEBHOOK_KEY_FILE", ""), "PEM private key of --webhook-cert-file (env HTC_WEBHOOK_KEY_FILE)")
	fs.StringVar(&o.CertSecret, "webhook-cert-secret", envDefault("HTC_WEBHOOK_CERT_SECRET", ""), "namespace/name of a kubernetes.io/tls Secret holding the serving certificate, instead of the files (env HTC_WEBHOOK_CERT_SECRET)")
	fs.StringVar(&o.ClientCAFile, "webhook-client-ca-file", envDefault("HTC_WEBHOOK_CLIENT_CA_FILE", ""), "PEM CA bundle; when set, clients (the API server) must present a certificate it signed (env HTC_WEBHOOK_CLIENT_CA_FILE)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", envDefaultRenamed("HTC_METRICS_BIND_ADDRESS", "HTC_METRICS_ADDR", controller.DefaultMetricsAddr, stderr), "listen address of the Prometheus /metrics endpoint (plain HTTP); empty disables it (env HTC_METRICS_BIND_ADDRESS)")
	deprecatedAlias(fs, "metrics-addr", "metrics-bind-address")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", envDefaultRenamed("HTC_HEALTH_PROBE_BIND_ADDRESS", "HTC_HEALTH_ADDR", controller.DefaultHealthAddr, stderr), "listen address of /healthz and /readyz (plain HTTP); empty disables it (env HTC_HEALTH_PROBE_BIND_ADDRESS)")
	deprecatedAlias(fs, "health-addr", "health-probe-bind-address")
	fs.BoolVar(&o.Pprof, "pprof", f.envBool("HTC_PPROF"), "serve Go's net/http/pprof profiles at /debug/pprof/ on the metrics listener; needs --metrics-bind-address (env HTC_PPROF)")
	fs.StringVar(&o.OutputDir, "output-dir", envDefault("HTC_OUTPUT_DIR", ""), "publish the checked live configuration here: DIR/haproxy.cfg, with maps, files and certificates beside it; empty: only validate (env HTC_OUTPUT_DIR)")
	fs.StringVar(&o.MasterSocket, "haproxy-master-socket", envDefault("HTC_HAPROXY_MASTER_SOCKET", ""), "HAProxy master CLI socket (haproxy -W -S PATH) to reload through after a publish; needs --output-dir (env HTC_HAPROXY_MASTER_SOCKET)")
	fs.BoolVar(&f.runtimeAPI, "haproxy-runtime-api", f.envBoolDefault("HTC_HAPROXY_RUNTIME_API", true), "apply a change HAProxy's runtime API can make as a reload would (servers, map content, certificates) without a reload; false: reload for every change (env HTC_HAPROXY_RUNTIME_API)")
	fs.StringVar(&f.reloadInterval, "haproxy-reload-interval", envDefault("HTC_HAPROXY_RELOAD_INTERVAL", controller.DefaultReloadInterval.String()), "least time between two reloads of HAProxy: a change that needs one sooner waits for it, so that a storm of changes starts at most one worker per interval (changes applied at run time never wait); 0s: never wait (env HTC_HAPROXY_RELOAD_INTERVAL)")
	fs.StringVar(&f.runtimeCheckEvery, "runtime-check-every", envDefault("HTC_RUNTIME_CHECK_EVERY", strconv.Itoa(controller.DefaultRuntimeCheckEvery)), "compare what HAProxy runs (show servers state, show map, show ssl cert) with the files after every N rounds applied at run time, besides when idle; a difference is logged, counted (htc_runtime_mismatch_total), reported (condition RuntimeVerified) and repaired by a reload; 0: only when idle (env HTC_RUNTIME_CHECK_EVERY)")
	f.allowed = allowedDirectivesFlag(fs)
	fs.StringVar(&f.debounce, "debounce", envDefault("HTC_DEBOUNCE", controller.DefaultDebounce.String()), "quiet period after a change before the live configuration is rendered; an update of an object's status only waits 250ms unless another change comes (env HTC_DEBOUNCE)")
	fs.StringVar(&f.maxDelay, "max-delay", envDefault("HTC_MAX_DELAY", controller.DefaultMaxDelay.String()), "longest a stream of changes can postpone rendering the live configuration (env HTC_MAX_DELAY)")
	fs.StringVar(&o.WebhookConfiguration, "webhook-configuration", envDefault("HTC_WEBHOOK_CONFIGURATION", ""), "ValidatingWebhookConfiguration whose webhooks the controller registers once it is ready (from its haproxy-template.io/webhook-template annotation; never created); empty: register nothing (env HTC_WEBHOOK_CONFIGURATION)")
	fs.StringVar(&o.DeploymentName, "deployment-name", envDefault("HTC_DEPLOYMENT_NAME", ""), "the controller's Deployment in --config-namespace: a stopping replica removes the registered webhooks only when it is scaled to zero or deleted; empty: whenever it stops (env HTC_DEPLOYMENT_NAME)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", f.envBool("HTC_LEADER_ELECT"), "elect a leader among the replicas with a Lease: only the leader writes the config's status, its Events and the webhook registration (env HTC_LEADER_ELECT)")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", envDefault("HTC_LEADER_ELECTION_NAMESPACE", ""), "namespace of the Lease <config-name>-leader; empty means --config-namespace (env HTC_LEADER_ELECTION_NAMESPACE)")
	fs.StringVar(&f.leaseDuration, "leader-elect-lease-duration", envDefault("HTC_LEADER_ELECT_LEASE_DURATION", controller.DefaultLeaseDuration.String()), "how long a leader that stopped renewing keeps the Lease (env HTC_LEADER_ELECT_LEASE_DURATION)")
	fs.StringVar(&f.renewDeadline, "leader-elect-renew-deadline", envDefault("HTC_LEADER_ELECT_RENEW_DEADLINE", controller.DefaultRenewDeadline.String()), "how long the leader tries to renew the Lease before it stops leading (env HTC_LEADER_ELECT_RENEW_DEADLINE)")
	fs.StringVar(&f.retryPeriod, "leader-elect-retry-period", envDefault("HTC_LEADER_ELECT_RETRY_PERIOD", controller.DefaultRetryPeriod.String()), "how often the replicas try to acquire or renew the Lease (env HTC_LEADER_ELECT_RETRY_PERIOD)")
	fs.BoolVar(&o.FullRender, "full-render", f.envBool("HTC_FULL_RENDER"), "turn incremental rendering off: every render runs every fragment instead of reusing what the last render of the live state kept of those whose item and reads did not change (env HTC_FULL_RENDER)")
	fs.StringVar(&f.shortcutCheckEvery, "shortcut-check-every", envDefault("HTC_SHORTCUT_CHECK_EVERY", strconv.Itoa(controller.DefaultShortcutCheckEvery)), "check the shortcuts (incremental rendering, the map-only and read-set skips) against the full computation at least every N live rounds (an update that renders alike, stored without a round, counts as one), at low priority (work interrupts a check: it runs again later); a mismatch turns that shortcut off until restart (condition ShortcutsVerified, htc_shortcut_mismatch_total); 0: never by count (env HTC_SHORTCUT_CHECK_EVERY)")
	fs.BoolVar(&o.ShortcutCheckWhenIdle, "shortcut-check-when-idle", f.envBoolDefault("HTC_SHORTCUT_CHECK_WHEN_IDLE", true), "also check the shortcuts whenever the controller has been idle for --idle-memory-return (which finds the idle periods; with it 0, only --shortcut-check-every checks), and only then the stores' pruning: one object of each store read again whole from the API server must render what the store keeps of it (a mismatch turns pruning off and lists every watched resource again, whole) (env HTC_SHORTCUT_CHECK_WHEN_IDLE)")
	fs.StringVar(&f.memLimit, "memory-limit", envDefault("HTC_MEMORY_LIMIT", memoryLimitAuto), "soft memory limit of the Go runtime (e.g. 400Mi): the garbage collector works harder near it. auto: GOMEMLIMIT when set, else 90% of the container's memory limit (cgroup), else none; none: no limit (env HTC_MEMORY_LIMIT)")
	fs.StringVar(&f.idleMemoryReturn, "idle-memory-return", envDefault("HTC_IDLE_MEMORY_RETURN", controller.DefaultIdleMemoryReturn.String()), idleMemoryReturnUsage())
	fs.StringVar(&f.gcPercent, "gc-percent", envDefault("HTC_GC_PERCENT", gcPercentAuto), "how far the Go heap grows past its live data before a collection, in percent (1-10000): lower uses less memory and more CPU. auto: GOGC when set, else 50 (env HTC_GC_PERCENT)")
	fs.StringVar(&f.shutdownDelay, "shutdown-delay", envDefault("HTC_SHUTDOWN_DELAY", "0s"), "on SIGTERM, go on serving this long with /readyz answering 503 before stopping, so that the webhook Service's endpoints drop the pod first and no admission request finds it gone (the chart sets 5s); 0: stop at once (env HTC_SHUTDOWN_DELAY)")
	f.logs = addLogFlags(fs)
	return f
}

// envBool is the boolean environment variable name (false when unset); a
// value that is not a boolean is reported by options.
func (f *controllerFlags) envBool(name string) bool { return f.envBoolDefault(name, false) }

// envBoolDefault is envBool with def when the variable is unset.
func (f *controllerFlags) envBoolDefault(name string, def bool) bool {
	v := envDefault(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil && f.envErr == nil {
		f.envErr = usagef("%s: %q is not a boolean (true or false)", name, v)
	}
	return b
}

// options checks the parsed flags and returns the controller's options
// (without a logger).
func (f *controllerFlags) options() (controller.Options, error) {
	opts := f.opts
	if f.envErr != nil {
		return opts, f.envErr
	}
	opts.AllowedDirectives = f.allowed.stringList
	p, err := strconv.Atoi(f.port)
	if err != nil || p < 1 || p > 65535 {
		return opts, usagef("--webhook-port: %q is not a port number (1-65535)", f.port)
	}
	if f.bindAddr != "" && net.ParseIP(f.bindAddr) == nil {
		return opts, usagef("--webhook-bind-address: %q is not an IP address", f.bindAddr)
	}
	opts.WebhookAddr = net.JoinHostPort(f.bindAddr, strconv.Itoa(p))
	if opts.WatchNamespaces, err = watchNamespaces(f.namespaces.stringList); err != nil {
		return opts, err
	}
	if opts.Debounce, err = positiveDuration("debounce", f.debounce); err != nil {
		return opts, err
	}
	if opts.MaxDelay, err = positiveDuration("max-delay", f.maxDelay); err != nil {
		return opts, err
	}
	if opts.IdleMemoryReturn, err = idleMemoryReturn(f.idleMemoryReturn); err != nil {
		return opts, err
	}
	if opts.ShutdownDelay, err = time.ParseDuration(f.shutdownDelay); err != nil || opts.ShutdownDelay < 0 {
		return opts, usagef("--shutdown-delay: %q is not a duration of 0 or more (e.g. 5s)", f.shutdownDelay)
	}
	if opts.ShortcutCheckEvery, err = shortcutCheckEvery(f.shortcutCheckEvery); err != nil {
		return opts, err
	}
	opts.ReloadOnly = !f.runtimeAPI
	switch d, err := time.ParseDuration(f.reloadInterval); {
	case err != nil || d < 0:
		return opts, usagef("--haproxy-reload-interval: %q is not a duration of 0 or more (e.g. 2s)", f.reloadInterval)
	case d == 0:
		opts.ReloadInterval = -1
	default:
		opts.ReloadInterval = d
	}
	switch n, err := strconv.Atoi(f.runtimeCheckEvery); {
	case err != nil || n < 0:
		return opts, usagef("--runtime-check-every: %q is not a number of rounds (e.g. 10), or 0 for only when idle", f.runtimeCheckEvery)
	case n == 0 || opts.ReloadOnly:
		opts.RuntimeCheckEvery = -1
	default:
		opts.RuntimeCheckEvery = n
	}
	if opts.IdleMemoryReturn < 0 {
		// No idle periods are found: the checks run by count alone.
		opts.ShortcutCheckWhenIdle = false
	}
	for _, d := range []struct {
		name, v string
		to      *time.Duration
	}{
		{"leader-elect-lease-duration", f.leaseDuration, &opts.LeaseDuration},
		{"leader-elect-renew-deadline", f.renewDeadline, &opts.RenewDeadline},
		{"leader-elect-retry-period", f.retryPeriod, &opts.RetryPeriod},
	} {
		if *d.to, err = positiveDuration(d.name, d.v); err != nil {
			return opts, err
		}
	}
	if err := checkControllerOptions(&opts); err != nil {
		return opts, err
	}
	return opts, nil
}

// checkControllerOptions reports, in the flags' words, what
// controller.Options.Validate would refuse, then runs it.
func checkControllerOptions(opts *controller.Options) error {
	switch {
	case opts.MaxDelay < opts.Debounce:
		return usagef("--max-delay (%s) must not be shorter than --debounce (%s)", opts.MaxDelay, opts.Debounce)
	case opts.MasterSocket != "" && opts.OutputDir == "":
		return usagef("--haproxy-master-socket needs --output-dir: HAProxy is reloaded after the configuration was written there")
	case opts.OutputDir != "" && haproxy.NameableDir(opts.OutputDir) != nil:
		return usagef("--output-dir: %v", haproxy.NameableDir(opts.OutputDir))
	case opts.Pprof && opts.MetricsAddr == "":
		return usagef("--pprof needs --metrics-bind-address: the profiles are served on the metrics listener")
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
	return nil
}

// watchNamespaces checks the --watch-namespace names (DNS labels) and
// drops duplicates; nil means every namespace.
func watchNamespaces(names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, usagef("--watch-namespace: %q is not a namespace name: %s", n, strings.Join(errs, "; "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// idleMemoryReturnUsage is --idle-memory-return's description.
func idleMemoryReturnUsage() string {
	return fmt.Sprintf("once the controller has been idle this long after work (%d MiB allocated while busy since the last return), collect garbage and return the heap's free memory to the operating system; idle: allocating under %d KiB/s. At least %s; 0: never (the Go runtime still returns it, slowly) (env HTC_IDLE_MEMORY_RETURN)",
		memreturn.MinWork>>20, memreturn.QuietRate>>10, memreturn.MinPeriod)
}

// idleMemoryReturn parses --idle-memory-return: a duration of at least
// memreturn.MinPeriod, or 0 (never; controller.Options takes a negative
// value for that).
func idleMemoryReturn(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil || d < 0:
		return 0, usagef("--idle-memory-return: %q is not a duration of %s or more (e.g. 15s), or 0 for never", v, memreturn.MinPeriod)
	case d == 0:
		return -1, nil
	case d < memreturn.MinPeriod:
		return 0, usagef("--idle-memory-return: %s is shorter than %s: a shorter period would find quiet moments inside a burst", d, memreturn.MinPeriod)
	}
	return d, nil
}

// shortcutCheckEvery parses --shortcut-check-every: a number of live
// renders, or 0 for never by count (controller.Options takes a negative
// value for that).
func shortcutCheckEvery(v string) (int, error) {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 0:
		return 0, usagef("--shortcut-check-every: %q is not a number of live renders (e.g. 100), or 0 for never by count", v)
	case n == 0:
		return -1, nil
	}
	return n, nil
}

// positiveDuration parses a flag's duration ("250ms", "2s"), which must be > 0.
func positiveDuration(flagName, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, usagef("--%s: %q is not a positive duration (e.g. 100ms, 2s)", flagName, v)
	}
	return d, nil
}
