package dryrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
)

var ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}

// testEnv builds pipelines that check with the real haproxy.
func testEnv(t testing.TB) dryrun.Env {
	t.Helper()
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	return dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }}
}

// pipelineFor parses and builds a pipeline in env.
func pipelineFor(t testing.TB, doc string, env dryrun.Env) *dryrun.Pipeline {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, env)
	require.NoError(t, err)
	return p
}

func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

// testrunOptions runs every test once, sequentially.
func testrunOptions() testrun.Options { return testrun.Options{Workers: 1} }
