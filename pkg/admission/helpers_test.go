package admission_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// testEnv builds pipelines that check with the real haproxy.
func testEnv(t testing.TB) dryrun.Env {
	t.Helper()
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	return dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }}
}

// pipelineFor parses, validates and builds a pipeline with the real haproxy.
func pipelineFor(t testing.TB, doc string) *dryrun.Pipeline {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, testEnv(t))
	require.NoError(t, err)
	return p
}

func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

// decision is a Decision with its Report, as the tests read them.
type decision struct {
	admission.Decision
	admission.Report
}

// decided is admit's decision of r (an Admitter's Decide, Resource or
// Config) with the report it returned beside it.
func decided(ctx context.Context, admit func(context.Context, admission.Request) (admission.Decision, admission.Report), r admission.Request) decision {
	d, rep := admit(ctx, r)
	return decision{Decision: d, Report: rep}
}

// wholeState is the State of p over stores that hold whole objects (as a
// test fills them): a proposed config may read any field of them.
func wholeState(p *dryrun.Pipeline, stores map[string]*store.Store) *admission.State {
	kept := make(map[string]*watched.Keep, len(stores))
	for key := range stores {
		kept[key] = nil
	}
	return &admission.State{Pipeline: p, Stores: stores, Kept: kept}
}

// diagnosis is the Diagnosis of a Diagnose, without its trace.
func diagnosis(d *dryrun.Diagnosis, _ dryrun.Trace) *dryrun.Diagnosis { return d }
