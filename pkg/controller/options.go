package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/haproxy-template/htc/internal/memreturn"
	"github.com/haproxy-template/htc/pkg/haproxy"
)

// Options configure Run.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means in-cluster, then the
	// default loading rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// ConfigNamespace and ConfigName name the HAProxyTemplateConfig; required.
	ConfigNamespace, ConfigName string
	// WebhookAddr is the HTTPS listen address of /validate; empty means ":9443".
	WebhookAddr string
	// CertFile and KeyFile are the serving certificate and key, reread when
	// they change. Either these or CertSecret is required.
	CertFile, KeyFile string
	// CertSecret ("namespace/name") is a kubernetes.io/tls Secret holding the
	// serving certificate (tls.crt, tls.key), watched for rotation.
	CertSecret string
	// ClientCAFile, when set, makes the webhook require a client certificate
	// signed by one of its CAs.
	ClientCAFile string
	// MetricsAddr serves /metrics; empty disables the metrics server.
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz; empty disables the health server.
	HealthAddr string
	// HAProxyPath is the haproxy binary (default "haproxy" from PATH).
	HAProxyPath string
	// Logger receives structured logs; nil discards.
	Logger *slog.Logger
	// RESTConfig, when set, is used instead of loading Kubeconfig (tests).
	RESTConfig *rest.Config
	// OnListening, when set, is called with the webhook's listen address once
	// it accepts connections (tests that listen on port 0).
	OnListening func(addr net.Addr)

	// OutputDir, when set, is where the live configuration is published
	// after it passed every check: haproxy.cfg at its root, maps, files and
	// certificates beside it at the paths pathFor gives, each file replaced
	// atomically (see package publish). Empty: the controller only
	// validates (admissions, the Valid condition); nothing is written.
	OutputDir string
	// MasterSocket is HAProxy's master CLI socket (haproxy -W -S PATH).
	// When set, every publish that changed a file is followed by a reload
	// through it, verified by the master's reload counter; a reload HAProxy
	// refuses restores the previous files. Requires OutputDir.
	MasterSocket string
	// ReloadOnly makes HAProxy reload for every change of the published
	// files: nothing is applied through its runtime API. Off (the zero
	// value): a change the runtime API can make as a reload would (package
	// dataplane: servers, map content, certificates) is applied without a
	// reload.
	ReloadOnly bool
	// ReloadInterval is the least time between two reloads: a change that
	// needs one sooner is written and waits for the interval's end, so
	// that a storm of changes starts at most one HAProxy worker per
	// interval (changes applied at run time never wait). Zero means
	// DefaultReloadInterval (2 s); negative never waits.
	ReloadInterval time.Duration
	// RuntimeCheckEvery: what HAProxy runs is compared with the files
	// (show servers state, show map, show ssl cert) after this many
	// rounds applied at run time, and when the controller is idle after
	// one (IdleMemoryReturn finds the idle periods); a difference is
	// logged, counted, reported (condition RuntimeVerified) and repaired
	// by a reload. Zero means DefaultRuntimeCheckEvery (10); negative
	// compares only when idle.
	RuntimeCheckEvery int
	// Debounce is the quiet period after a change of the stores or the
	// config before the live configuration is rendered; zero means
	// DefaultDebounce (20 ms). An update of an object's status only waits
	// StatusDebounce (or MaxDelay, when shorter) unless another change
	// comes.
	Debounce time.Duration
	// AllowedDirectives is the operator's grant: what configs may ask for
	// in spec.allowedDirectives (directive names, "env-expansion",
	// "path:<dir>"). A config asking for more is not applied and is denied
	// at admission; empty grants nothing.
	AllowedDirectives []string
	// MaxDelay bounds how long a stream of changes postpones the render:
	// a change is rendered at most MaxDelay after it arrived, plus the
	// render, check and reload time. Zero means DefaultMaxDelay (1 s).
	MaxDelay time.Duration
	// WatchNamespaces limits the informers of namespaced watched resources
	// to these namespaces; empty watches every namespace. An object in
	// another namespace is in no store: a change of it is admitted without
	// a check, like an object outside a labelSelector. Cluster-scoped
	// resources are watched whole.
	WatchNamespaces []string
	// Pprof serves net/http/pprof at /debug/pprof/ on the metrics listener
	// (MetricsAddr).
	Pprof bool
	// IdleMemoryReturn is how long the controller must be idle after work
	// before it collects garbage and returns the heap's free memory to the
	// operating system (internal/memreturn): a period is idle when the
	// heap allocated in it at less than memreturn.QuietRate (4 MiB per
	// 15 s), and a return needs memreturn.MinWork (32 MiB) allocated in
	// busy periods since the last one. At least memreturn.MinPeriod (1
	// s); zero means DefaultIdleMemoryReturn (15 s); a negative value
	// never returns memory early (the Go runtime still does, slowly).
	IdleMemoryReturn time.Duration
	// FullRender turns incremental rendering off: the live loop's renders
	// record nothing, so every render (admissions included) runs every
	// fragment of the templates (see render.Input.Record).
	FullRender bool
	// ShortcutCheckEvery: the controller checks its shortcuts against the
	// full computation (package shadow: a full render of the live state,
	// haproxy -c without reuse, the state with and without a change
	// admitted unrendered) at least every this many live renders; a check
	// that work interrupts waits for the next occasion. Zero means
	// DefaultShortcutCheckEvery (100); negative never checks by count.
	ShortcutCheckEvery int
	// ShortcutCheckWhenIdle also checks them when the controller has been
	// idle for a period of IdleMemoryReturn (which must then not be
	// negative). The htc controller command turns it on by default.
	ShortcutCheckWhenIdle bool
	// Build describes this binary for the htc_build_info metric.
	Build BuildInfo
	// AdmissionTimeout bounds one admission decision (the proposed change
	// rendered, checked and its embedded tests run); zero means
	// webhook.DefaultValidationTimeout (5 s). The webhook handler sets the
	// deadline (this, or the shorter timeout the API server sends). Keep it below the webhook's
	// timeoutSeconds. Tests on a busy machine under -race raise it.
	AdmissionTimeout time.Duration
	// ConfigAdmissionTimeout is AdmissionTimeout for a change of the
	// HAProxyTemplateConfig, whose admission renders every watched object
	// with the proposed templates; zero means
	// webhook.DefaultConfigValidationTimeout (25 s). Keep it below the
	// config webhook's timeoutSeconds (configTimeoutSeconds, default 30).
	ConfigAdmissionTimeout time.Duration

	// WebhookConfiguration names the ValidatingWebhookConfiguration whose
	// webhooks the controller registers once it is ready (stores synced,
	// the first live round done, a certificate loaded) and keeps in line
	// with the config, from the template in its annotation
	// (webhook.TemplateAnnotation); it is never created. Empty: nothing is
	// registered (whoever runs the controller registers the webhooks).
	WebhookConfiguration string
	// DeploymentName is the controller's Deployment in ConfigNamespace:
	// when a replica stops, the webhooks are removed from
	// WebhookConfiguration only when the Deployment is scaled to zero or
	// deleted. Empty: they are removed whenever the controller stops.
	DeploymentName string

	// LeaderElection makes the replicas elect a leader with a Lease
	// (LeaseName of the config name) in LeaderElectionNamespace: every
	// replica serves the webhook and publishes to its own HAProxy, only
	// the leader writes the config's status, its Events and the webhook
	// registration. Off: this process is the only writer.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; empty means ConfigNamespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election;
	// zero means DefaultLeaseDuration, DefaultRenewDeadline,
	// DefaultRetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity is this replica's name in the Lease and in its Events;
	// empty means the host name (the pod's name) and a random suffix.
	Identity string

	// ShutdownDelay is how long the controller goes on serving after ctx
	// ends, everything running as before but /readyz answering 503: in a
	// cluster the endpoints of the webhook Service (the API server's and
	// kube-proxy's copies) drop a stopping pod only a moment after it was
	// deleted, and an admission request sent to it meanwhile must get its
	// answer, not a refused connection. Zero: stop at once.
	ShutdownDelay time.Duration
}

// Validate checks the options that need no I/O.
func (o *Options) Validate() error {
	var problems []string
	if o.ConfigNamespace == "" {
		problems = append(problems, "the config namespace is required")
	}
	if o.ConfigName == "" {
		problems = append(problems, "the config name is required")
	}
	files := o.CertFile != "" || o.KeyFile != ""
	switch {
	case files && o.CertSecret != "":
		problems = append(problems, "set either a certificate and key file or a certificate Secret, not both")
	case files && (o.CertFile == "" || o.KeyFile == ""):
		problems = append(problems, "the certificate file and the key file must be set together")
	case !files && o.CertSecret == "":
		problems = append(problems, "a serving certificate is required (certificate and key files, or a Secret)")
	}
	if o.CertSecret != "" {
		if _, _, err := splitSecret(o.CertSecret); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if o.MasterSocket != "" && o.OutputDir == "" {
		problems = append(problems, "the HAProxy master socket needs an output directory to publish to")
	}
	if o.OutputDir != "" {
		if err := haproxy.NameableDir(o.OutputDir); err != nil {
			problems = append(problems, "the output directory: "+err.Error())
		}
	}
	if o.Pprof && o.MetricsAddr == "" {
		problems = append(problems, "pprof is served on the metrics listener, which is disabled")
	}
	if o.ShutdownDelay < 0 {
		problems = append(problems, "the shutdown delay must not be negative")
	}
	if o.ReloadOnly && o.RuntimeCheckEvery > 0 {
		problems = append(problems, "comparing what HAProxy runs with the files is for changes applied at run time, which reload-only turns off")
	}
	if o.Debounce < 0 || o.MaxDelay < 0 {
		problems = append(problems, "the debounce and maximum delay must not be negative")
	}
	if o.ShortcutCheckWhenIdle && o.IdleMemoryReturn < 0 {
		problems = append(problems, "checking the shortcuts when idle needs the idle memory return, which finds the idle periods")
	}
	if o.IdleMemoryReturn > 0 && o.IdleMemoryReturn < memreturn.MinPeriod {
		problems = append(problems, fmt.Sprintf("the idle memory return period %s is shorter than %s", o.IdleMemoryReturn, memreturn.MinPeriod))
	}
	problems = append(problems, o.validateLeaderElection()...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func splitSecret(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("certificate Secret %q is not namespace/name", s)
	}
	return ns, name, nil
}
