package testrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/watched"
)

// runnerFor parses doc and returns a runner of its tests that checks with
// the real haproxy.
func runnerFor(t testing.TB, doc string) *testrun.Runner {
	t.Helper()
	return runnerWith(t, doc, nil)
}

// runnerWith is runnerFor with another renderer (nil: the config's engine).
func runnerWith(t testing.TB, doc string, wrap func(testrun.Renderer) testrun.Renderer) *testrun.Runner {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	model, err := watched.New(&cfg.Spec)
	require.NoError(t, err)
	engine, err := render.New(&cfg.Spec)
	require.NoError(t, err)
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	var r testrun.Renderer = engine
	if wrap != nil {
		r = wrap(engine)
	}
	return testrun.New(&cfg.Spec, model, r, checker, "/etc/haproxy")
}
