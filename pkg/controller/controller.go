package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/internal/memreturn"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"github.com/haproxy-template/htc/pkg/controller/informer"
	"github.com/haproxy-template/htc/pkg/controller/leader"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/controller/objstatus"
	"github.com/haproxy-template/htc/pkg/controller/registration"
	"github.com/haproxy-template/htc/pkg/controller/servingcert"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/redact"
	"github.com/haproxy-template/htc/pkg/render"
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

// controller is the state of one Run.
type controller struct {
	opts         Options
	log          *slog.Logger
	dyn          dynamic.Interface
	mapper       meta.RESTMapper
	env          dryrun.Env // how pipelines are built
	admitter     *admission.Admitter
	registry     *webhook.Registry
	metrics      *metrics.Set
	certs        *servingcert.Source
	status       *cfgstatus.Reporter
	objStatus    *objstatus.Writer // the status of watched objects (spec.resourceStatus)
	live         *live
	switches     *shortcut.Switches // the shortcuts taken (off after a mismatch)
	shadow       *shadow.Verifier   // the run-time checks of the shortcuts
	mismatches   []shadow.Outcome   // found by the shadow checks (mismatchesMu)
	mismatchesMu sync.Mutex
	identity     string                     // this replica's name in the Lease and its Events
	leader       *leader.Leadership         // whether this replica writes status, Events, registration
	registration *registration.Registration // the webhook registration; nil: none

	synced   atomic.Bool // the stores of a good config synced; admissions served
	draining atomic.Bool // Run's context ended: serving until ShutdownDelay ran out

	// relist asks the config loop to list the watched resources again
	// (capacity 1: askRelist).
	relist chan struct{}
	// prepared are the watchers of what proposed configs read otherwise
	// than the stores in use (package informer; the Admitter's Source).
	prepared *informer.Prepared

	// owned by the config loop
	watchers map[watched.WatchKey]*informer.Watcher
	// retired are watchers a newer one replaced (it keeps fields they
	// prune); they feed the stores in use until the next switch.
	retired []*informer.Watcher
	// inUse are the watchers of the config in use (switchTo), for
	// atIdleReturn, which runs beside the config loop.
	inUse   atomic.Pointer[[]*informer.Watcher]
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
	c.objStatus.Client = cl.status
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
	c.registration = registration.New(registration.Options{Name: opts.WebhookConfiguration, Namespace: opts.ConfigNamespace,
		WatchNamespaces: opts.WatchNamespaces, Deployment: opts.DeploymentName},
		registration.Deps{Kube: cl.kube, CABundle: c.certs.CABundle, Ready: c.serving, Leading: c.leader.IsLeading}, log)
	c.certs.OnChange = c.registration.Kick
	if err := c.serve(ctx, spawn); err != nil {
		cancel()
		_ = g.Wait()
		return err
	}
	if opts.LeaderElection {
		spawn("leader election", func() error { return c.elect(ctx, cl.kube) })
	}
	if opts.IdleMemoryReturn >= 0 {
		r, err := memreturn.New(orDuration(opts.IdleMemoryReturn, DefaultIdleMemoryReturn), c.metrics.Registry, log)
		if err != nil {
			cancel()
			_ = g.Wait()
			return err
		}
		r.BeforeReturn(c.atIdleReturn)
		r.OnQuiet(func() bool {
			checking := c.shadow.Idle()
			c.live.idle()
			return c.learnShapes(ctx) || checking
		})
		r.Start() // before the config loop lists anything: the load is work
		spawn("idle memory return", func() error { r.Run(ctx); return nil })
	}
	spawn("shortcut checks", func() error { c.shadow.Run(ctx); return nil })
	spawn("webhook registration", func() error { c.registration.Run(ctx); return nil })
	spawn("config", func() error { c.configLoop(ctx); return nil })
	spawn("resource status", func() error { c.objStatus.Run(ctx); return nil })
	spawn("live", func() error {
		d := newDebouncer(nil, opts.Debounce, orDuration(opts.MaxDelay, DefaultMaxDelay))
		d.busy = func() bool { return c.admitter.InFlight() > 0 }
		d.deferred = c.metrics.LiveRoundsDeferred.Inc
		c.live.run(ctx, d)
		return nil
	})
	<-ctx.Done()
	log.Info("controller shutting down")
	err = g.Wait()
	// The config's status is written behind the rounds (cfgstatus): what
	// the last rounds set is written before the controller ends.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), objstatus.WriteTimeout)
	if werr := c.status.Wait(wctx); werr != nil {
		log.Warn("the HAProxyTemplateConfig status was not all written before the controller ended", "error", werr)
	}
	wcancel()
	c.registration.Stopped()
	return err
}

// atIdleReturn lets go, just before an idle memory return collects and
// returns the free memory (memreturn.Returner.BeforeReturn), of what the
// controller keeps only for work to come: the prepared watchers of
// proposed configs that listed (informer.Prepared.StopListed; the next
// admission of such a config lists again) and the parts the informers'
// share tables remember (informer.Watcher.ForgetShared; the next update
// starts new copies of its parts) and what the live pipeline's caches keep
// of proposals' bundles (admission.Admitter.Retain: their changed texts;
// the next admission hashes, parses and scans its changed files again).
// None changes what any render reads or any check answers.
func (c *controller) atIdleReturn() {
	if n := c.prepared.StopListed(); n > 0 {
		c.log.Info("stopped the prepared watchers of proposed configs at an idle memory return", "watchers", n)
	}
	if ws := c.inUse.Load(); ws != nil {
		for _, w := range *ws {
			w.ForgetShared()
		}
	}
	c.admitter.Retain()
}

// learnShapesTimeout bounds one quiet period's learning of shapes.
const learnShapesTimeout = 30 * time.Second

// learnShapes lets the admitter learn, in a quiet period, the stub
// verdicts of the backend section shapes the live configuration has most
// (admission.Admitter.LearnShapes), and reports whether that ran haproxy
// -c: then the idle memory return waits for a quiet period after it.
func (c *controller) learnShapes(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, learnShapesTimeout)
	defer cancel()
	n := c.admitter.LearnShapes(ctx)
	if n > 0 {
		c.log.Debug("learned the stub verdicts of common backend section shapes in a quiet period", "stubs", n)
	}
	return n > 0
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
	c.metrics.SetBuild(c.opts.Build.Version, c.opts.Build.Revision, c.opts.Build.GoVersion, v)
	c.log.Info("htc controller starting", "version", orString(c.opts.Build.Version, "dev"), "revision", orString(c.opts.Build.Revision, "unknown"),
		"haproxyVersion", orString(v, "unknown"), "watchNamespaces", c.opts.WatchNamespaces)
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
		p := &c.live.plane
		p.reloadOnly = c.opts.ReloadOnly
		p.reloadInterval = max(orDuration(c.opts.ReloadInterval, DefaultReloadInterval), 0)
		switch n := c.opts.RuntimeCheckEvery; {
		case n == 0:
			p.checkEvery = DefaultRuntimeCheckEvery
		case n > 0:
			p.checkEvery = n
		default:
			p.checkEvery = 0
		}
	}
	return nil
}

// recordEvents sends the status reporter's Events to the API server until
// the returned function is called.
func (c *controller) recordEvents(ctx context.Context, kube kubernetes.Interface) (stop func()) {
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c.status.Recorder = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "htc-controller", Host: c.identity})
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
	certs := servingcert.Config{CertFile: c.opts.CertFile, KeyFile: c.opts.KeyFile}
	if certs.CertFile == "" {
		var err error
		if certs.SecretNamespace, certs.SecretName, err = splitSecret(c.opts.CertSecret); err != nil {
			return err
		}
	}
	if err := c.certs.Start(ctx, certs, c.dyn, spawn); err != nil {
		return err
	}
	handler := webhook.NewHandler(webhook.HandlerOptions{Registry: c.registry, Timeout: c.opts.AdmissionTimeout,
		ConfigTimeout: c.opts.ConfigAdmissionTimeout, Logger: c.log, Observer: c.metrics.Observer(), Ready: c.ready})
	// A connection's deadlines run from the request's start: they must
	// leave the longest decision (a config's) time to be written (a write
	// past its deadline leaves a broken TLS record).
	configTimeout := c.opts.ConfigAdmissionTimeout
	if configTimeout <= 0 {
		configTimeout = webhook.DefaultConfigValidationTimeout
	}
	connTimeout := max(webhook.DefaultWriteTimeout, max(c.opts.AdmissionTimeout, configTimeout)+5*time.Second)
	srv, err := webhook.NewServer(webhook.ServerOptions{
		Addr:           orString(c.opts.WebhookAddr, DefaultWebhookAddr),
		Handler:        handler,
		ReadTimeout:    connTimeout,
		WriteTimeout:   connTimeout,
		GetCertificate: c.certs.GetCertificate,
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
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.Registry, promhttp.HandlerOpts{Registry: c.metrics.Registry}))
	if c.opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// templateSets is how many compiled template sets the controller's
// pipelines share (render.Templates): the live config's, and those of
// the configs proposed since, the most recent first. The live config's
// costs nothing more (its engine holds it anyway); each other one holds
// a parsed set, under 0.7 MB for the ingress-nginx library.
const templateSets = 4

// assertionPatterns is how many regular expressions of embedded tests'
// assertions the controller's pipelines remember as parsed
// (validation.Patterns): those of a few configs (the ingress-nginx
// library has 117), a digest and an outcome each.
const assertionPatterns = 2048

// newController returns a controller whose pipelines check with checker
// (nil: they can render but not check).
func newController(opts Options, log *slog.Logger, dyn dynamic.Interface, mapper meta.RESTMapper, checker *haproxy.Checker) *controller {
	switches := newSwitches(opts)
	env := dryrun.Env{Tests: testrun.NewCache(16), Templates: render.NewTemplates(templateSets), Patterns: validation.NewPatterns(assertionPatterns), Grant: opts.AllowedDirectives, Shortcuts: switches}
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
		admitter: &admission.Admitter{Env: env, Log: log, WatchNamespaces: opts.WatchNamespaces,
			OwnConfig: types.NamespacedName{Namespace: opts.ConfigNamespace, Name: opts.ConfigName}},
		registry: &webhook.Registry{},
		watchers: map[watched.WatchKey]*informer.Watcher{},
		relist:   make(chan struct{}, 1),
		certs:    servingcert.New(log),
		switches: switches,
	}
	c.metrics = metrics.New(c.certs.NotAfter)
	c.identity = orString(opts.Identity, leader.DefaultIdentity())
	c.leader = leader.New(opts.LeaderElection, c.metrics.Registry)
	c.metrics.SetBuild(opts.Build.Version, opts.Build.Revision, opts.Build.GoVersion, "")
	c.status = newStatusReporter(dyn, nil, log)
	c.status.Leading = c.leader.IsLeading
	c.status.Updates = newStatusUpdates(c.metrics.Registry)
	c.objStatus = objstatus.New(dyn, c.leader.IsLeading, c.metrics.Registry, log)
	c.objStatus.Collect = runtime.GC
	c.live = newLive(c.admitter, nil, nil, c.status, c.metrics, log)
	c.live.objStatus = c.objStatus
	c.objStatus.Stale = c.live.trigger
	c.live.record = !opts.FullRender
	c.shadow = c.newShadow(checker)
	if checker != nil {
		c.metrics.WatchParseCache(checker)
	}
	c.live.shadow = c.shadow
	c.prepared = informer.NewPrepared(c.startPrepared, c.live.trigger, log)
	c.admitter.Source = c.prepared
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
func (c *controller) serving() bool { return c.synced.Load() && c.certs.Loaded() }

// readyz answers 200 once the stores synced and a certificate is loaded,
// until the controller stops.
func (c *controller) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case c.draining.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case !c.certs.Loaded():
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
