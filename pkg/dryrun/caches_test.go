package dryrun_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// The caches of package dryrun are invalidated by what docs/caches.md
// says.

// secretReadingConfig is noHAProxyTests watching Secrets too, with a
// file rendered from a Secret's data.
var secretReadingConfig = strings.NewReplacer(
	"  maps:\n", "  files:\n    token: {template: \"{{ with .resources.secrets.Get \\\"x\\\" \\\"token\\\" }}{{ index .data \\\"token\\\" | b64dec }}{{ end }}\"}\n  maps:\n",
	"    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}\n",
	"    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}\n"+
		"    secrets: {apiVersion: v1, resources: secrets, indexBy: [metadata.namespace, metadata.name]}\n",
).Replace(noHAProxyTests)

func tokenSecret(token, labels string) string {
	return `{apiVersion: v1, kind: Secret, metadata: {name: token, namespace: x` + labels + `}, data: {token: ` + base64.StdEncoding.EncodeToString([]byte(token)) + `}}`
}

// The check cache is keyed on the bundle: a change of a Secret the bundle
// reads is checked again; a change of the Secret the render does not read
// (a label) is not.
func TestCheckCacheMissesWhenAReadSecretChanges(t *testing.T) {
	env, cc := countingEnv(t, nil)
	p := pipelineFor(t, secretReadingConfig, env)
	check := func(secret string) (*dryrun.Verdict, dryrun.Trace) {
		stores := p.Model.NewStores()
		require.NoError(t, stores["services"].Add(obj(t, svc(t, "a", ""))))
		require.NoError(t, stores["secrets"].Add(obj(t, secret)))
		v, tr := p.CheckWith(context.Background(), store.ReadOnly(stores), dryrun.CheckOptions{})
		require.True(t, v.Passed(), v.Reason)
		return v, tr
	}
	_, tr := check(tokenSecret("one", ""))
	assert.False(t, tr.CheckCached)
	_, tr = check(tokenSecret("one", `, labels: {x: "y"}`))
	assert.True(t, tr.CheckCached, "a label the render does not read")
	assert.Equal(t, int64(1), cc.runs.Load())

	v, tr := check(tokenSecret("two", ""))
	assert.False(t, tr.CheckCached, "the Secret the bundle reads changed")
	assert.Equal(t, int64(2), cc.runs.Load())
	assert.Equal(t, "two", v.Bundle.Files["token"])
}

// The embedded tests' reports are keyed on the config's spec: another
// pipeline of the same spec finds the report, a changed spec runs them
// again.
func TestTestReportsAreKeyedOnTheSpec(t *testing.T) {
	env := testEnv(t)
	env.Tests = testrun.NewCache(4)
	ctx := context.Background()
	run := func(doc string) bool {
		p := pipelineFor(t, doc, env)
		report, cached, err := p.Tests(ctx)
		require.NoError(t, err)
		require.NoError(t, report.Err())
		return cached
	}
	assert.False(t, run(noHAProxyTests))
	assert.True(t, run(noHAProxyTests), "the same spec, another pipeline")
	assert.False(t, run(strings.Replace(noHAProxyTests, "maxconn 100", "maxconn 101", 1)), "the spec changed")
}

// The read set is the config's: a label no template of one config reads
// renders alike there, and not under a config whose templates read it.
func TestReadSetIsTheConfigs(t *testing.T) {
	labelled := func(value string) store.Change {
		return store.Change{Operation: store.Update, Object: obj(t, svc(t, "a", `, labels: {team: `+value+`}`))}
	}
	for _, tc := range []struct {
		name  string
		doc   string
		alike bool
	}{
		{"a config that does not read labels", noHAProxyTests, true},
		{"a config that reads the label", strings.Replace(noHAProxyTests, "backend {{ word .metadata.name }}", "backend {{ word .metadata.name }}{{ with .metadata.labels }}{{ .team }}{{ end }}", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pipelineFor(t, tc.doc, testEnv(t))
			stores := p.Model.NewStores()
			require.NoError(t, stores["services"].Add(obj(t, svc(t, "a", `, labels: {team: a}`))))
			assert.Equal(t, tc.alike, p.RendersAlike(stores, map[string]store.Change{"services": labelled("b")}))
		})
	}
}
