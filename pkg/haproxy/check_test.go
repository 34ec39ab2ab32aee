package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
)

func realChecker(t *testing.T, opts Options) *Checker {
	t.Helper()
	opts.HAProxyPath = realHAProxy(t)
	c, err := NewChecker(opts)
	require.NoError(t, err)
	return c
}

func TestCheckValidWithWarnings(t *testing.T) {
	c := realChecker(t, Options{})
	ws := newTestWorkspace(t)
	b := bundleFor(ws.Dir(), testConfig("backend tcpbe\n    mode tcp\n    option httplog\n    server s1 127.0.0.1:9000\n"), testMaps(), nil)

	res, err := c.Check(context.Background(), b)
	require.NoError(t, err)
	require.NotEmpty(t, res.Warnings)
	for _, w := range res.Warnings {
		assert.NotContains(t, w, "[WARNING]")
		assert.NotContains(t, w, ws.Dir())
	}
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "haproxy.cfg:19: ")
	for _, ph := range []phase.Phase{phase.Policy, phase.Syntax, phase.Schema, phase.Semantic} {
		assert.Contains(t, res.Durations, ph)
	}

	// The checker works on a private copy: nothing is written where the
	// bundle will be deployed.
	assert.NoFileExists(t, filepath.Join(ws.Dir(), "maps", "host.map"))
}

// TestCheckRelocatesTheBundle: a bundle rendered for a directory that does
// not exist here (where HAProxy will read it) is checked in a workspace,
// with its paths moved there; its text, and so the parse cache, does not
// depend on the workspace.
func TestCheckRelocatesTheBundle(t *testing.T) {
	parent := t.TempDir()
	c := realChecker(t, Options{TempDir: parent})
	c.parsed = nil // the parse cache itself, not the outcomes kept by haproxy.cfg (parsed.go)
	const base = "/nonexistent/htc-deploy"
	b := bundleFor(base, testConfig(""), testMaps(), nil)
	require.Contains(t, b.Config, base+"/maps/host.map")

	_, err := c.Check(context.Background(), b)
	require.NoError(t, err, "the map is found in the workspace")
	first := c.ParseCacheStats()
	_, err = c.Check(context.Background(), bundleFor(base, testConfig(""), testMaps(), nil))
	require.NoError(t, err)
	second := c.ParseCacheStats()
	assert.Zero(t, second.Misses-first.Misses, "an equal bundle parses from the cache in a new workspace")
	assert.Positive(t, second.Hits-first.Hits)

	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, entries, "every workspace was removed")

	// A path under the base that is not a file of the bundle is not found.
	_, err = c.Check(context.Background(), bundleFor(base, testConfig("    errorfile 503 {{dir}}/files/missing.http\n"), testMaps(), nil))
	require.Error(t, err)
	pe, ok := errors.AsType[*phase.Error](err)
	require.True(t, ok)
	assert.NotContains(t, pe.Reason, parent, "the reason never shows the workspace")
}

func TestCheckSkipPhases(t *testing.T) {
	c := realChecker(t, Options{SkipSyntax: true, SkipSchema: true})
	ws := newTestWorkspace(t)
	res, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), testMaps(), nil))
	require.NoError(t, err)
	assert.NotContains(t, res.Durations, phase.Syntax)
	assert.NotContains(t, res.Durations, phase.Schema)
	assert.Contains(t, res.Durations, phase.Semantic)
}

func TestCheckFailingPhases(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		phase  phase.Phase
		reason string
		detail any
	}{
		{
			name:   "policy",
			extra:  "backend lua\n    lua-load {{dir}}/files/x.lua\n",
			phase:  phase.Policy,
			reason: "haproxy.cfg:18: directive 'lua-load' is not allowed (add it to spec.allowedDirectives to permit it)",
			detail: &policy.Error{},
		},
		{
			name:   "policy unknown keyword",
			extra:  "backend be1\n    frobnicate yes\n",
			phase:  phase.Policy,
			reason: "haproxy.cfg:18: unknown keyword 'frobnicate' in 'backend' section",
			detail: &policy.Error{},
		},
		{
			name:   "syntax",
			extra:  "backend be1\n    mode wibble\n",
			phase:  phase.Syntax,
			reason: "haproxy.cfg:18: invalid arguments to 'mode'",
			detail: &SyntaxError{},
		},
		{
			name:   "schema",
			extra:  "backend be1\n    server s1 127.0.0.1:70000\n",
			phase:  phase.Schema,
			reason: "haproxy.cfg:18: backend 'be1' server 's1': port should be less than or equal to 65535",
			detail: &SchemaError{},
		},
		{
			name:   "semantic",
			extra:  "frontend fe2\n    bind 127.0.0.1:18081\n    default_backend nope\n",
			phase:  phase.Semantic,
			reason: "Proxy 'fe2': unable to find required default_backend: 'nope'",
			detail: &SemanticError{},
		},
	}
	c := realChecker(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(tt.extra), testMaps(), nil))
			require.Error(t, err)
			var pe *phase.Error
			require.True(t, errors.As(err, &pe), "%T %v", err, err)
			assert.Equal(t, tt.phase, pe.Phase)
			assert.Equal(t, tt.reason, pe.Reason)
			assert.IsType(t, tt.detail, pe.Err)
			assert.NotContains(t, pe.Reason, ws.Dir())
		})
	}
}

func TestCheckMissingMapIsSemantic(t *testing.T) {
	c := realChecker(t, Options{})
	ws := newTestWorkspace(t)
	_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), nil, nil))
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, phase.Semantic, pe.Phase)
	assert.Contains(t, pe.Reason, "haproxy.cfg:11: ")
	assert.Contains(t, pe.Reason, "failed to open pattern file <maps/host.map>")
}

// TestCheckCanary proves that the policy stops code execution: a Lua file
// that would create a marker is refused before haproxy runs, and the same
// file does run when lua-load is explicitly allowed (so the canary is live).
func TestCheckCanary(t *testing.T) {
	markerDir := t.TempDir()
	marker := filepath.Join(markerDir, "pwned")
	lua := `os.execute("touch ` + marker + `")` + "\n"

	cases := map[string]string{
		"plain":    "global\n    lua-load {{dir}}/files/canary.lua\n",
		"smuggled": "backend smuggle\n    http-request set-header X-Note \"harmless\nlua-load {{dir}}/files/canary.lua\"\n",
		"escaped":  "global\n    \"lua\"\\x2dload {{dir}}/files/canary.lua\n",
	}
	c := realChecker(t, Options{})
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			b := bundleFor(ws.Dir(), testConfig(extra), testMaps(), map[string]string{"canary.lua": lua})
			_, err := c.Check(context.Background(), b)
			var pe *phase.Error
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, phase.Policy, pe.Phase)
			assert.Contains(t, pe.Reason, "'lua-load'")
			assert.NoFileExists(t, marker)
			// Nothing was written either.
			assert.NoFileExists(t, filepath.Join(ws.Dir(), "files", "canary.lua"))
		})
	}

	t.Run("control: allowed lua-load really runs", func(t *testing.T) {
		allowing := realChecker(t, Options{AllowedDirectives: []string{"lua-load"}, SkipSyntax: true, SkipSchema: true})
		ws := newTestWorkspace(t)
		b := bundleFor(ws.Dir(), testConfig(cases["plain"]), testMaps(), map[string]string{"canary.lua": lua})
		_, _ = allowing.Check(context.Background(), b)
		assert.FileExists(t, marker, "the canary did not run: the test proves nothing")
	})
}

// TestConcurrentChecks runs whole checks concurrently (run it with -race:
// config-parser has a package variable that concurrent parses would race on).
func TestConcurrentChecks(t *testing.T) {
	c := realChecker(t, Options{MaxParallel: 2})
	errs := make(chan error, 6)
	for i := 0; i < cap(errs); i++ {
		ws := newTestWorkspace(t)
		go func() {
			_, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig("defaults named\n    mode http\n"), testMaps(), nil))
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		assert.NoError(t, <-errs)
	}
}

// The syntax and schema phases never refuse more than haproxy -c: a
// finding haproxy -c accepts is a warning (Result.Overruled); one it
// refuses too is the reason, in its own phase.
func TestParsePhasesNeverStricterThanHAProxy(t *testing.T) {
	c := realChecker(t, Options{})
	ctx := context.Background()
	accepted := bundleFor("/etc/haproxy", cacheConfig([]string{"global", "defNamedBad", "fe", "be0", "be1", "be2"}), testMaps(), nil)
	res, err := c.Check(ctx, accepted)
	require.NoError(t, err, "haproxy -c accepts a defaults name with '@'")
	require.Len(t, res.Overruled, 1)
	assert.Equal(t, phase.Schema, res.Overruled[0].Phase)
	assert.Contains(t, res.Overruled[0].Reason, "bad@defs")
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "schema check: haproxy.cfg:")
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "(haproxy -c accepts it)")

	// The same finding beside an error haproxy -c refuses on another line:
	// haproxy's message is the reason.
	refused := bundleFor("/etc/haproxy", cacheConfig([]string{"global", "defNamedBad", "fe", "be0", "be1", "be2"})+"backend broken\n    timeout server abc\n", testMaps(), nil)
	_, err = c.Check(ctx, refused)
	pe, ok := errors.AsType[*phase.Error](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, phase.Semantic, pe.Phase)
	assert.Contains(t, pe.Reason, "timeout")
	assert.NotContains(t, pe.Reason, "bad@defs")
}

// The host name never reaches a reason: haproxy -c runs with a fixed local
// peer name instead of the host name, which HAProxy repeats in messages.
func TestCheckDoesNotUseTheHostName(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	c := realChecker(t, Options{})
	b := bundleFor("/etc/haproxy", testConfig("peers p\n    peer other 127.0.0.1:10000\n"), testMaps(), nil)
	res, err := c.Check(context.Background(), b)
	out := fmt.Sprint(err)
	if res != nil {
		out += strings.Join(res.Warnings, "\n")
	}
	assert.Contains(t, out, "'"+LocalPeerName+"'", "HAProxy names the local peer it was given")
	assert.NotContains(t, out, "'"+host+"'")
}
