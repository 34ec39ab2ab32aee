package haproxy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

	// The bundle was written with private permissions.
	st, err := os.Stat(filepath.Join(ws.Dir(), "maps", "host.map"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
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
			detail: &PolicyError{},
		},
		{
			name:   "policy unknown keyword",
			extra:  "backend be1\n    frobnicate yes\n",
			phase:  phase.Policy,
			reason: "haproxy.cfg:18: unknown keyword 'frobnicate' in 'backend' section",
			detail: &PolicyError{},
		},
		{
			name:   "syntax",
			extra:  "backend be1\n    retries frobnicate\n",
			phase:  phase.Syntax,
			reason: "haproxy.cfg:18: invalid arguments to 'retries'",
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
