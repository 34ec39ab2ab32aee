package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/internal/memreturn"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/redact"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// Defaults of Options.
const (
	DefaultWebhookAddr = webhook.DefaultAddr
	DefaultMetricsAddr = ":9090"
	DefaultHealthAddr  = ":8081"
	// DefaultIdleMemoryReturn is Options.IdleMemoryReturn's default.
	DefaultIdleMemoryReturn = 15 * time.Second
)

// BuildInfo describes the running binary, for the htc_build_info metric.
type BuildInfo struct {
	// Version is the htc version ("dev" when empty).
	Version string
	// Revision is the VCS revision ("unknown" when empty).
	Revision string
	// GoVersion is the Go release that built it (runtime.Version() when
	// empty).
	GoVersion string
}

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
	// Debounce is the quiet period after a change of the stores or the
	// config before the live configuration is rendered; zero means
	// DefaultDebounce (100 ms).
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
	// admission.DefaultTimeout (5 s). Keep it below the webhook's
	// timeoutSeconds. Tests on a busy machine under -race raise it.
	AdmissionTimeout time.Duration

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
	if o.Pprof && o.MetricsAddr == "" {
		problems = append(problems, "pprof is served on the metrics listener, which is disabled")
	}
	if o.ShutdownDelay < 0 {
		problems = append(problems, "the shutdown delay must not be negative")
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

// controller is the state of one Run.
type controller struct {
	opts         Options
	log          *slog.Logger
	dyn          dynamic.Interface
	mapper       meta.RESTMapper
	env          dryrun.Env // how pipelines are built
	admitter     *admission.Admitter
	registry     *webhook.Registry
	metrics      *metrics
	certs        *certSource
	status       *statusReporter
	live         *live
	switches     *shortcut.Switches // the shortcuts taken (off after a mismatch)
	shadow       *shadow.Verifier   // the run-time checks of the shortcuts
	mismatches   []shadow.Outcome   // found by the shadow checks (mismatchesMu)
	mismatchesMu sync.Mutex
	identity     string        // this replica's name in the Lease and its Events
	leader       *leadership   // whether this replica writes status, Events, registration
	registration *registration // the webhook registration; nil: none

	synced   atomic.Bool // the stores of a good config synced; admissions served
	draining atomic.Bool // Run's context ended: serving until ShutdownDelay ran out

	// owned by the config loop
	watchers map[watched.WatchKey]*watcher
	// retired are watchers a newer one replaced (it keeps fields they
	// prune); they feed the stores in use until the next switch.
	retired []*watcher
	lastRV  string
	applied *config.HAProxyTemplateConfig
}

// Run runs the controller until ctx is cancelled: it serves the webhook,
// health and metrics, watches its config and the resources the config
// names. It returns nil after a clean shutdown, or the first fatal error
// (bad options, an address already in use, an unreadable certificate).
func Run(ctx context.Context, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cl, err := newClients(opts)
	if err != nil {
		return err
	}
	tempDir, err := os.MkdirTemp("", "htc-controller-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tempDir)
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: opts.HAProxyPath, TempDir: tempDir})
	if err != nil {
		return fmt.Errorf("the controller cannot check configurations: %w", err)
	}
	c := newController(opts, log, cl.dyn, webhook.NewDiscoveryRESTMapper(cl.discovery), checker)
	c.readCheckerVersion(ctx, checker)
	c.admitter.Private, c.admitter.PrivateWords = redact.ProcessValues(tempDir), redact.ProcessWords()
	if err := c.setUpPublishing(); err != nil {
		return err
	}

	ctx, cancel := c.drain(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	spawn := func(name string, f func() error) {
		g.Go(func() error {
			if err := f(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	stopEvents := c.recordEvents(ctx, cl.kube)
	defer stopEvents()
	c.registration = newRegistration(opts, registrationDeps{kube: cl.kube, caBundle: c.certs.caBundle,
		ready: c.serving, leading: c.leader.isLeading}, log)
	c.certs.onChange = c.registration.kick
	if err := c.serve(ctx, spawn); err != nil {
		cancel()
		_ = g.Wait()
		return err
	}
	if opts.LeaderElection {
		spawn("leader election", func() error { return c.elect(ctx, cl.kube) })
	}
	if opts.IdleMemoryReturn >= 0 {
		r, err := memreturn.New(orDuration(opts.IdleMemoryReturn, DefaultIdleMemoryReturn), c.metrics.reg, log)
		if err != nil {
			cancel()
			_ = g.Wait()
			return err
		}
		r.OnQuiet(c.shadow.Idle)
		r.Start() // before the config loop lists anything: the load is work
		spawn("idle memory return", func() error { r.Run(ctx); return nil })
	}
	spawn("shortcut checks", func() error { c.shadow.Run(ctx); return nil })
	spawn("webhook registration", func() error { c.registration.run(ctx); return nil })
	spawn("config", func() error { c.configLoop(ctx); return nil })
	spawn("live", func() error {
		c.live.run(ctx, newDebouncer(nil, opts.Debounce, orDuration(opts.MaxDelay, DefaultMaxDelay)))
		return nil
	})
	<-ctx.Done()
	log.Info("controller shutting down")
	err = g.Wait()
	c.registration.stopped()
	return err
}

// drain returns the context the controller runs under: it ends
// Options.ShutdownDelay after parent did, /readyz answering 503 from the
// moment parent ended (see Options.ShutdownDelay), or when cancel is
// called.
func (c *controller) drain(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() {
		c.draining.Store(true)
		if c.opts.ShutdownDelay > 0 {
			c.log.Info("stopping: not ready, serving until the shutdown delay ran out", "delay", c.opts.ShutdownDelay)
			t := time.NewTimer(c.opts.ShutdownDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		cancel()
	})
	return ctx, func() { stop(); cancel() }
}

// readCheckerVersion reads the version of the HAProxy that checks (haproxy
// -v) for htc_build_info and the version-skew check, and logs it with the
// build.
func (c *controller) readCheckerVersion(ctx context.Context, checker *haproxy.Checker) {
	v, err := checker.Version(ctx)
	if err != nil {
		c.log.Warn("reading the checker's HAProxy version failed", "error", err)
		v = ""
	}
	c.live.checkerVersion = v
	c.metrics.setBuild(c.opts.Build, v)
	c.log.Info("htc controller starting", "version", orString(c.opts.Build.Version, "dev"), "revision", orString(c.opts.Build.Revision, "unknown"),
		"haproxyVersion", orString(v, "unknown"), "watchNamespaces", c.opts.WatchNamespaces)
}

// clients are the API clients of one Run.
type clients struct {
	dyn       dynamic.Interface
	discovery discovery.DiscoveryInterface
	kube      kubernetes.Interface
}

// newClients loads the kubeconfig (or uses opts.RESTConfig) and creates
// the dynamic, discovery and typed clients.
func newClients(opts Options) (*clients, error) {
	restCfg := opts.RESTConfig
	if restCfg == nil {
		var err error
		if restCfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	restCfg = rest.CopyConfig(restCfg)
	if restCfg.QPS == 0 {
		restCfg.QPS, restCfg.Burst = 50, 100
	}
	restCfg.UserAgent = "htc-controller"
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return &clients{dyn: dyn, discovery: dc, kube: kube}, nil
}

// setUpPublishing opens the output directory (pipelines then render for
// it) and the master socket client, when the options name them.
func (c *controller) setUpPublishing() error {
	if c.opts.OutputDir != "" {
		out, err := publish.Open(c.opts.OutputDir)
		if err != nil {
			return fmt.Errorf("the output directory: %w", err)
		}
		c.live.out = out
		c.env.BaseDir = out.Path()
		c.admitter.Env = c.env
		c.log.Info("publishing the live configuration", "dir", out.Path(), "masterSocket", c.opts.MasterSocket)
	}
	if c.opts.MasterSocket != "" {
		c.live.master = &master.Client{SocketPath: c.opts.MasterSocket}
	}
	return nil
}

// recordEvents sends the status reporter's Events to the API server until
// the returned function is called.
func (c *controller) recordEvents(ctx context.Context, kube kubernetes.Interface) (stop func()) {
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c.status.recorder = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "htc-controller", Host: c.identity})
	return events.Shutdown
}

// serve starts the certificate source, the webhook, and the health and
// metrics servers the options ask for.
func (c *controller) serve(ctx context.Context, spawn func(string, func() error)) error {
	var clientCA []byte
	if c.opts.ClientCAFile != "" {
		var err error
		if clientCA, err = os.ReadFile(c.opts.ClientCAFile); err != nil {
			return fmt.Errorf("reading the client CA: %w", err)
		}
	}
	if err := c.certs.start(ctx, c.opts, c.dyn, spawn); err != nil {
		return err
	}
	handler := webhook.NewHandler(webhook.HandlerOptions{Registry: c.registry, Timeout: c.opts.AdmissionTimeout,
		Logger: c.log, Observer: c.metrics.observer(), Ready: c.ready})
	// A connection's deadlines run from the request's start: they must
	// leave the decision time to be written (a write past its deadline
	// leaves a broken TLS record).
	connTimeout := max(webhook.DefaultWriteTimeout, c.opts.AdmissionTimeout+5*time.Second)
	srv, err := webhook.NewServer(webhook.ServerOptions{
		Addr:           orString(c.opts.WebhookAddr, DefaultWebhookAddr),
		Handler:        handler,
		ReadTimeout:    connTimeout,
		WriteTimeout:   connTimeout,
		GetCertificate: c.certs.getCertificate,
		ClientCAPEM:    clientCA,
		Draining:       c.draining.Load,
		Logger:         c.log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", srv.Addr())
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	c.log.Info("webhook listening", "addr", ln.Addr().String())
	spawn("webhook", func() error { return srv.Serve(ctx, ln) })
	if c.opts.OnListening != nil {
		c.opts.OnListening(ln.Addr())
	}
	return c.serveProbesAndMetrics(ctx, spawn)
}

// serveProbesAndMetrics serves /healthz and /readyz, and /metrics, on their
// addresses when set.
func (c *controller) serveProbesAndMetrics(ctx context.Context, spawn func(string, func() error)) error {
	if c.opts.HealthAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		mux.HandleFunc("/readyz", c.readyz)
		if err := serveHTTP(ctx, "health", c.opts.HealthAddr, mux, c.log, spawn); err != nil {
			return err
		}
	}
	if c.opts.MetricsAddr != "" {
		if err := serveHTTP(ctx, "metrics", c.opts.MetricsAddr, c.metricsHandler(), c.log, spawn); err != nil {
			return err
		}
	}
	return nil
}

// metricsHandler serves /metrics and, with Options.Pprof, Go's profiles
// at /debug/pprof/.
func (c *controller) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.reg, promhttp.HandlerOpts{Registry: c.metrics.reg}))
	if c.opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// newController returns a controller whose pipelines check with checker
// (nil: they can render but not check).
func newController(opts Options, log *slog.Logger, dyn dynamic.Interface, mapper meta.RESTMapper, checker *haproxy.Checker) *controller {
	switches := newSwitches(opts)
	env := dryrun.Env{Tests: testrun.NewCache(16), Grant: opts.AllowedDirectives, Shortcuts: switches}
	if checker != nil {
		checker = checker.WithShortcuts(switches)
		env.CheckerFor = func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }
	}
	c := &controller{
		opts:   opts,
		log:    log,
		dyn:    dyn,
		mapper: mapper,
		env:    env,
		admitter: &admission.Admitter{Env: env, Log: log, Timeout: opts.AdmissionTimeout, WatchNamespaces: opts.WatchNamespaces,
			OwnConfig: types.NamespacedName{Namespace: opts.ConfigNamespace, Name: opts.ConfigName}},
		registry: &webhook.Registry{},
		watchers: map[watched.WatchKey]*watcher{},
		certs:    &certSource{log: log},
		switches: switches,
	}
	c.metrics = newMetrics(c.certs.notAfter)
	c.identity = orString(opts.Identity, defaultIdentity())
	c.leader = newLeadership(opts.LeaderElection, c.metrics.reg)
	c.metrics.setBuild(opts.Build, "")
	c.status = newStatusReporter(dyn, nil, log)
	c.status.leading = c.leader.isLeading
	c.status.updates = newStatusUpdates(c.metrics.reg)
	c.live = newLive(c.admitter, nil, nil, c.status, c.metrics, log)
	c.live.record = !opts.FullRender
	c.shadow = c.newShadow(checker)
	c.live.shadow = c.shadow
	return c
}

// StartingReason is the denial reason of every admission request that
// arrives before the controller's stores synced.
const StartingReason = "htc is starting: stores not synced yet"

// ready is the webhook's readiness gate: admissions are decided once the
// stores of a good config synced, denied with StartingReason before.
func (c *controller) ready() (bool, string) {
	if c.synced.Load() {
		return true, ""
	}
	return false, StartingReason
}

// serving reports whether the controller decides admissions and can be
// reached: the stores of a good config synced (after its first live
// round) and a serving certificate is loaded. Only then are its webhooks
// registered.
func (c *controller) serving() bool { return c.synced.Load() && c.certs.loaded() }

// readyz answers 200 once the stores synced and a certificate is loaded,
// until the controller stops.
func (c *controller) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case c.draining.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case !c.certs.loaded():
		http.Error(w, "no serving certificate loaded yet", http.StatusServiceUnavailable)
	case !c.synced.Load():
		http.Error(w, "stores not synced yet", http.StatusServiceUnavailable)
	default:
		_, _ = w.Write([]byte("ok"))
	}
}

// serveHTTP listens on addr and serves h until ctx is cancelled.
func serveHTTP(ctx context.Context, name, addr string, h http.Handler, log *slog.Logger, spawn func(string, func() error)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	log.Info(name+" server listening", "addr", ln.Addr().String())
	// The write timeout leaves room for a CPU profile or trace of up to a
	// minute (pprof refuses longer ones).
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 70 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	spawn(name, func() error {
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return nil
	})
	return nil
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
