package testutil

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
)

// Example is the example Ingress library (examples/ingress/config.yaml)
// built into a pipeline that checks with the real haproxy, over stores
// holding n generated apps (ClusterApp).
type Example struct {
	// Pipeline is the example config's pipeline.
	Pipeline *dryrun.Pipeline
	// Checker is the checker the pipeline uses.
	Checker *haproxy.Checker
	// Stores hold the generated apps.
	Stores map[string]*store.Store
}

// ExampleOptions tune NewExample.
type ExampleOptions struct {
	// Apps is the number of generated apps.
	Apps int
	// Loopback gives the apps' endpoints loopback addresses (for a running
	// HAProxy that health-checks them).
	Loopback bool
	// BaseDir is where the bundle is rendered for (default /etc/haproxy).
	BaseDir string
	// Edit, when set, changes the loaded config before it is built.
	Edit func(*config.HAProxyTemplateConfig)
	// Shortcuts are the checker's and the pipeline's switches (nil: every
	// shortcut on).
	Shortcuts *shortcut.Switches
	// CheckTimeout bounds each haproxy -c (zero: haproxy.DefaultTimeout),
	// for benchmarks at 10,000 apps on a busy machine.
	CheckTimeout time.Duration
}

// NewExample builds the example library from the config at configPath.
func NewExample(tb testing.TB, configPath string, opts ExampleOptions) *Example {
	tb.Helper()
	cfg, err := config.LoadFile(configPath)
	require.NoError(tb, err)
	if opts.Edit != nil {
		opts.Edit(cfg)
	}
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: tb.TempDir(), Shortcuts: opts.Shortcuts, Timeout: opts.CheckTimeout})
	require.NoError(tb, err)
	env := dryrun.Env{BaseDir: opts.BaseDir, CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) },
		Shortcuts: opts.Shortcuts}
	p, err := dryrun.Build(cfg, env)
	require.NoError(tb, err)
	stores := p.Model.NewStores()
	require.NoError(tb, AddClusterApps(stores, opts.Apps, opts.Loopback))
	return &Example{Pipeline: p, Checker: checker, Stores: stores}
}
