package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
)

func TestInclude(t *testing.T) {
	spec := &config.HAProxyTemplateConfigSpec{
		HAProxyConfig: config.Template{Template: `{{ $s := include "greet" (dict "who" "world") }}{{ upper $s }}|{{ if eq (include "yes" .) "true" }}ok{{ end }}`},
		TemplateSnippets: map[string]config.Template{
			"greet": {Template: `hello {{ .who }}`},
			"yes":   {Template: `true`},
			"loop":  {Template: `{{ include "loop" . }}`},
			"boom":  {Template: `{{ fail "Service 'api' not found" }}`},
		},
	}
	e, err := New(spec)
	require.NoError(t, err)
	b, err := e.Render(context.Background(), Input{BaseDir: "/b"})
	require.NoError(t, err)
	assert.Equal(t, "HELLO WORLD|ok", b.Config)

	for tmpl, want := range map[string]string{
		`{{ include "loop" . }}`:    "nested more than 64 deep",
		`{{ include "missing" . }}`: `include "missing": no such template`,
		`{{ include "boom" . }}`:    "Service 'api' not found",
	} {
		spec.HAProxyConfig.Template = tmpl
		e, err := New(spec)
		require.NoError(t, err)
		_, err = e.Render(context.Background(), Input{BaseDir: "/b"})
		assert.Contains(t, renderErr(t, err).Reason, want, tmpl)
	}
	spec.HAProxyConfig.Template = `{{ include "boom" . }}`
	e, err = New(spec)
	require.NoError(t, err)
	_, err = e.Render(context.Background(), Input{BaseDir: "/b"})
	assert.Equal(t, "Service 'api' not found", renderErr(t, err).Reason, "a fail inside include is the bare message")
}

func TestAddFile(t *testing.T) {
	spec := &config.HAProxyTemplateConfigSpec{
		HAProxyConfig: config.Template{Template: `crt {{ addFile "cert" "a.pem" "A" }} crt {{ addFile "cert" "a.pem" "A" }} {{ pathFor "cert" "a.pem" }}`},
		Maps:          map[string]config.Template{"m.map": {Template: `{{ pathFor "cert" "a.pem" }}`}},
	}
	e, err := New(spec)
	require.NoError(t, err)
	b, err := e.Render(context.Background(), Input{BaseDir: "/b"})
	require.NoError(t, err)
	assert.Equal(t, "crt /b/certs/a.pem crt /b/certs/a.pem /b/certs/a.pem", b.Config)
	assert.Equal(t, map[string]string{"a.pem": "A"}, b.Certs)
	assert.Equal(t, "/b/certs/a.pem", b.Maps["m.map"], "added files are known to later templates")

	// A second render on the pooled state starts without the first one's files.
	spec2 := &config.HAProxyTemplateConfigSpec{HAProxyConfig: config.Template{Template: `{{ if .extraContext }}{{ end }}x`}}
	e2, err := New(spec2)
	require.NoError(t, err)
	b2, err := e2.Render(context.Background(), Input{BaseDir: "/b"})
	require.NoError(t, err)
	assert.Empty(t, b2.Certs)
	b3, err := e.Render(context.Background(), Input{BaseDir: "/c"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a.pem": "A"}, b3.Certs)

	for tmpl, want := range map[string]string{
		`{{ addFile "cert" "a.pem" "A" }}{{ addFile "cert" "a.pem" "B" }}`: "added twice with different content",
		`{{ addFile "cert" "../x.pem" "A" }}`:                              `contains ".."`,
		`{{ addFile "cert" "/etc/x.pem" "A" }}`:                            "absolute path",
		`{{ addFile "lua" "x.lua" "A" }}`:                                  `unknown kind "lua"`,
		`{{ addFile "map" "m.map" "A" }}`:                                  "spec.maps already renders a map of that name",
		`{{ addFile "file" "x" 42 }}`:                                      "content must be a string",
	} {
		spec.HAProxyConfig.Template = tmpl
		e, err := New(spec)
		require.NoError(t, err)
		_, err = e.Render(context.Background(), Input{BaseDir: "/b"})
		assert.Contains(t, renderErr(t, err).Reason, want, tmpl)
	}
}
