package dryrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/render/reads"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// DefaultBaseDir is where HAProxy reads the bundle from when Env.BaseDir is
// empty: the directory pathFor resolves names against.
const DefaultBaseDir = "/etc/haproxy"

// Checker checks a rendered bundle (a *haproxy.Checker).
type Checker interface {
	// Check runs the check phases on b (see haproxy.Checker.Check).
	Check(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error)
	// CheckStatic runs the phases that run nothing: policy, syntax and
	// schema (see haproxy.Checker.CheckStatic).
	CheckStatic(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error)
}

// fixtureChecker is a Checker that can check the embedded tests' bundles
// without recording them as bases of later checks (a *haproxy.Checker:
// haproxy.Checker.ForFixtures). A Checker without it checks them as any
// bundle (a test's fake).
type fixtureChecker interface {
	ForFixtures() *haproxy.Checker
}

// Env is what a Pipeline needs besides its config. The zero Env builds a
// pipeline that can render but not check (htc render).
type Env struct {
	// CheckerFor returns the checker for a config's allowed directives
	// (e.g. (*haproxy.Checker).Allowing). Nil: the pipeline cannot check;
	// Check then fails and haproxy_valid assertions fail.
	CheckerFor func(allowed []string) Checker
	// Grant is what the operator allows configs to ask for in
	// spec.allowedDirectives (the controller's --allowed-directives):
	// directive names, "env-expansion" and "path:<dir>" entries. A config
	// can only narrow it: Build refuses a config that asks for more (see
	// policy.Grants). Empty grants nothing.
	Grant []string
	// BaseDir is the absolute directory HAProxy reads the bundle from:
	// pathFor's base, written into the rendered text. Empty means
	// DefaultBaseDir.
	BaseDir string
	// Tests caches embedded test reports across pipelines by config hash;
	// nil gives the pipeline a cache of its own.
	Tests *testrun.Cache
	// Templates keeps the compiled template sets across pipelines by the
	// digest of their sources (render.Templates), so a config whose
	// templates were compiled before is not parsed and scanned again; nil
	// compiles every config's.
	Templates *render.Templates
	// Patterns keeps which regular expressions of the embedded tests'
	// assertions parse (validation.Patterns), so that a config whose
	// assertions were validated before is not parsed again; nil parses
	// every config's.
	Patterns *validation.Patterns
	// RenderCheckTimeout bounds each render + check (not the embedded
	// tests: TestTimeout), whatever ctx's deadline: a fixed bound against a
	// template that loops, like haproxy.Options.Timeout for one haproxy -c.
	// Zero means none: ctx's deadline alone bounds the check (the webhook
	// and the controller always set one; the htc commands that check set
	// this instead, see cmd/htc).
	RenderCheckTimeout time.Duration
	// CheckCacheEntries bounds the pipeline's cache of check results by
	// bundle hash; zero means 64.
	CheckCacheEntries int
	// TestTimeout bounds one run of the embedded tests; zero means
	// testrun.DefaultTimeout (60 s).
	TestTimeout time.Duration
	// MaxBundleBytes caps the size of a rendered bundle (every output and
	// every file addFile adds); zero means render.DefaultMaxBytes (64 MiB).
	// A render that would exceed it fails the render phase with a
	// *render.LimitError naming the limit.
	MaxBundleBytes int64
	// Shortcuts says which shortcuts the pipelines may take (package
	// shortcut); nil: all of them. With Render off every render is full
	// and records nothing; with ReadSet off RendersAlike is always false;
	// with MapOnly off a cached check outcome that reused a haproxy -c
	// run is not used (the checker itself is told by its own Options).
	Shortcuts *shortcut.Switches
}

// Pipeline is everything derived from one HAProxyTemplateConfig: its
// watched-resource model, its parsed templates, its checker and its
// embedded tests. It is immutable once built and safe for concurrent use; a
// config change builds a new Pipeline.
type Pipeline struct {
	// Config is the configuration the pipeline was built from.
	Config *config.HAProxyTemplateConfig
	// Model is the config's watched resources.
	Model *watched.Model
	// Hash identifies the config's spec (embedded test results are cached
	// by it).
	Hash string

	engine  *render.Engine
	checker Checker // nil: render only
	tests   *testrun.Runner
	cache   *testrun.Cache
	checks  *checkCache
	hasher  *bundle.Hasher // the bundles' hashes (Verdict.BundleHash)
	env     Env
}

// InvalidConfigError is a config that fails validation: Errs name each
// field and its problem.
type InvalidConfigError struct {
	// Errs are the validation errors.
	Errs field.ErrorList
}

// Error joins the field errors.
func (e *InvalidConfigError) Error() string { return e.Errs.ToAggregate().Error() }

// Build validates cfg and builds its pipeline. A config that fails
// validation is an *InvalidConfigError; a template that does not parse is a
// *phase.Error of phase render (see render.New).
func Build(cfg *config.HAProxyTemplateConfig, env Env) (*Pipeline, error) {
	if cfg == nil {
		return nil, errors.New("dryrun: nil config")
	}
	errs, engine := validation.ValidateEngine(cfg, validation.Memo{Templates: env.Templates, Patterns: env.Patterns})
	errs = append(errs, ungranted(cfg.Spec.AllowedDirectives, env.Grant)...)
	if len(errs) > 0 {
		return nil, &InvalidConfigError{Errs: errs}
	}
	if env.BaseDir == "" {
		env.BaseDir = DefaultBaseDir
	}
	model, err := watched.New(&cfg.Spec)
	if err != nil {
		return nil, err
	}
	if engine == nil { // validation builds it; never expected
		if engine, err = render.New(&cfg.Spec); err != nil {
			return nil, fmt.Errorf("parsing templates of %s/%s: %w", cfg.Namespace, cfg.Name, err)
		}
	}
	var checker Checker
	var testChecker testrun.Checker
	if env.CheckerFor != nil {
		checker = env.CheckerFor(cfg.Spec.AllowedDirectives)
		testChecker = checker
		if f, ok := checker.(fixtureChecker); ok {
			testChecker = f.ForFixtures()
		}
	}
	cache := env.Tests
	if cache == nil {
		cache = testrun.NewCache(1)
	}
	return &Pipeline{
		Config:  cfg,
		Model:   model,
		Hash:    cfg.Spec.Hash(),
		engine:  engine,
		checker: checker,
		tests:   testrun.New(&cfg.Spec, model, engine, testChecker, env.BaseDir),
		cache:   cache,
		checks:  newCheckCache(env.CheckCacheEntries),
		hasher:  bundle.NewHasher(),
		env:     env,
	}, nil
}

// ungranted lists the spec.allowedDirectives entries the operator's grant
// does not permit.
func ungranted(allowed, grant []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "allowedDirectives")
	for i, a := range allowed {
		if !policy.Grants(grant, a) {
			errs = append(errs, field.Forbidden(p.Index(i), fmt.Sprintf("%q is not granted by the operator (the controller's --allowed-directives, Helm value controller.allowedDirectives); a config can only narrow what the operator allows", a)))
		}
	}
	return errs
}

// FragmentStats is render.Engine.FragmentStats of the config's templates:
// how many fragments renders reused and ran.
func (p *Pipeline) FragmentStats() render.FragmentStats { return p.engine.FragmentStats() }

// CarryFrom lets p's renders apply the fragment records of live's last
// recording render (the live loop's) for the fragments p's config leaves
// as they are (render.Engine.Carry): the render of a config UPDATE need not
// run them all again. It returns how many templates may apply them; 0 (and
// nothing carried) with the render or carry shortcut off, or for a live
// pipeline rendering for another BaseDir or size limit.
func (p *Pipeline) CarryFrom(live *Pipeline) int {
	if live == nil || live.env.BaseDir != p.env.BaseDir || live.env.MaxBundleBytes != p.env.MaxBundleBytes ||
		!p.env.Shortcuts.On(shortcut.Render) || !p.env.Shortcuts.On(shortcut.Carry) {
		return 0
	}
	return p.engine.Carry(live.engine)
}

// Reads is what the config's templates can read of the watched objects
// (render.Engine.Reads).
func (p *Pipeline) Reads() *reads.Set { return p.engine.Reads() }

// BaseDir is the directory the pipeline renders bundles for.
func (p *Pipeline) BaseDir() string { return p.env.BaseDir }

// Render renders the bundle over stores, without checking it.
func (p *Pipeline) Render(ctx context.Context, stores store.Set) (*bundle.Bundle, error) {
	return p.render(ctx, stores, false)
}

// RenderFull renders the bundle over stores without reusing any recorded
// work (render.Input.Full), and records nothing: the reference the
// controller's shadow checks compare the shortcuts' answers with.
func (p *Pipeline) RenderFull(ctx context.Context, stores store.Set) (*bundle.Bundle, error) {
	return p.engine.Render(ctx, render.Input{Stores: stores, BaseDir: p.env.BaseDir, MaxBytes: p.env.MaxBundleBytes, Full: true})
}

// render renders the bundle over stores, keeping what its fragments did
// for later renders when record is set (render.Input.Record). With the
// render shortcut off it renders in full and records nothing; with the
// read-set shortcut off it reuses a record only when its reads return
// the very objects they returned (render.Input.ExactReads).
func (p *Pipeline) render(ctx context.Context, stores store.Set, record bool) (*bundle.Bundle, error) {
	full := !p.env.Shortcuts.On(shortcut.Render)
	return p.engine.Render(ctx, render.Input{Stores: stores, BaseDir: p.env.BaseDir, MaxBytes: p.env.MaxBundleBytes, Record: record && !full, Full: full,
		ExactReads: !p.env.Shortcuts.On(shortcut.ReadSet)})
}

// Shortcuts is the Env's Switches (nil: every shortcut on).
func (p *Pipeline) Shortcuts() *shortcut.Switches { return p.env.Shortcuts }

// RendersAlike reports whether applying changes (by store key, see
// watched.Model.StoreChanges) to stores leaves every render of the
// pipeline's templates exactly as it is: each change updates an object
// that stays in its store, under the same index keys, and keeps every
// field the templates can read (reads.Set), e.g. a change of labels
// or annotations no template reads. Such a change can neither break nor
// fix anything, so it needs no check. With the read-set shortcut off it is
// always false.
func (p *Pipeline) RendersAlike(stores map[string]*store.Store, changes map[string]store.Change) bool {
	reads := p.engine.Reads()
	if len(changes) == 0 || !p.env.Shortcuts.On(shortcut.ReadSet) {
		return false
	}
	for key, c := range changes {
		s := stores[key]
		if c.Operation != store.Update || c.Object == nil || s == nil {
			return false
		}
		old, ok := s.ByName(c.Object.GetNamespace(), c.Object.GetName())
		if !ok {
			return false
		}
		oldKeys, err := s.Keys(old)
		if err != nil {
			return false
		}
		newKeys, err := s.Keys(c.Object)
		if err != nil || !slices.Equal(oldKeys, newKeys) || !reads.Same(key, old.Object, c.Object.Object) {
			return false
		}
	}
	return true
}

// RunTests runs the embedded tests with opts (htc validate), uncached.
func (p *Pipeline) RunTests(ctx context.Context, opts testrun.Options) (*testrun.Report, error) {
	return p.tests.Run(ctx, opts)
}

// Tests returns the report of every embedded test, from the cache when this
// config's tests ran before (cached reports whether it did). Tests run one
// at a time (Workers: 1), under the pipeline's test timeout.
func (p *Pipeline) Tests(ctx context.Context) (report *testrun.Report, cached bool, err error) {
	return p.cache.Run(ctx, p.Hash, p.tests, testrun.Options{Workers: 1, Timeout: p.env.TestTimeout})
}
