package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

func TestFail(t *testing.T) {
	tests := []struct {
		name     string
		cfg      string
		opts     []specOpt
		reason   string
		template string
		line     int
	}{
		{
			name: "in haproxy.cfg", cfg: "global\n  {{ fail \"Service 'api' not found\" }}",
			reason: "Service 'api' not found", template: "haproxy.cfg", line: 2,
		},
		{
			name: "in a snippet", cfg: "global\n{{ template \"check\" . }}",
			opts:   []specOpt{withSnippet("check", "{{/* c */}}\n\n{{ fail (printf \"Ingress %s/%s: no backend\" \"default\" \"web\") }}")},
			reason: "Ingress default/web: no backend", template: "check", line: 3,
		},
		{
			name: "in a define inside haproxy.cfg", cfg: "{{ define \"d\" }}\n{{ fail \"boom\" }}{{ end }}\n{{ template \"d\" }}",
			reason: "boom", template: "haproxy.cfg", line: 2,
		},
		{
			name: "in a map", cfg: "x", opts: []specOpt{withMap("m.map", "{{ fail \"message: with: colons >: and <brackets>\" }}")},
			reason: "message: with: colons >: and <brackets>", template: "map:m.map", line: 1,
		},
		{
			name: "in a snippet whose name has colons", cfg: "{{ template \"a:b:1:2\" . }}",
			opts:   []specOpt{withSnippet("a:b:1:2", "\n{{ fail \"x\" }}")},
			reason: "x", template: "a:b:1:2", line: 2,
		},
		{
			name: "without a message", cfg: "\n{{ fail \"\" }}",
			reason: "template haproxy.cfg line 2: fail was called without a message", template: "haproxy.cfg", line: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustEngine(t, tt.cfg, tt.opts...).Render(context.Background(), Input{})
			pe := renderErr(t, err)
			assert.Equal(t, tt.reason, pe.Reason)
			fe, ok := pe.Err.(*FailError)
			require.True(t, ok, "Err is %T", pe.Err)
			assert.Equal(t, tt.template, fe.Template)
			assert.Equal(t, tt.line, fe.Line)
		})
	}
}

func TestExecutionErrorsAreSimplified(t *testing.T) {
	stores := map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ingress("default", "web", "h", "s"))}
	tests := []struct {
		name, cfg string
		opts      []specOpt
		reason    string
	}{
		{
			name: "function error", cfg: "a\n{{ index .extraContext.list 5 }}", opts: []specOpt{withExtra(`{"list": [1]}`)},
			reason: "template haproxy.cfg line 2: index out of range: 5",
		},
		{
			name: "sprig function error", cfg: "\n\n{{ mustRegexMatch \"(\" \"x\" }}",
			reason: "template haproxy.cfg line 3: mustRegexMatch: error parsing regexp: missing closing ): `(`",
		},
		{
			name: "walking through a missing map", cfg: "{{ range .resources.ingresses.List }}\n{{ .metadata.labels.app }}{{ end }}",
			reason: "template haproxy.cfg line 2: .metadata.labels.app: cannot read .app of a missing value (use with, dig or field for optional fields)",
		},
		{
			name: "in a snippet", cfg: `{{ template "s" . }}`, opts: []specOpt{withSnippet("s", "\n{{ len 3 }}")},
			reason: "template s line 2: len of type int",
		},
		{
			name: "wrong argument type", cfg: `{{ pathFor 1 2 }}`,
			reason: "template haproxy.cfg line 1: 1: expected string; found 1",
		},
		{
			name: "calling a non-function", cfg: "{{ range .resources.ingresses.List }}{{ .metadata.name.x }}{{ end }}",
			reason: "template haproxy.cfg line 1: .metadata.name.x: can't evaluate field x in type interface {}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustEngine(t, tt.cfg, tt.opts...).Render(context.Background(), Input{Stores: stores})
			pe := renderErr(t, err)
			assert.Equal(t, tt.reason, pe.Reason)
			var te *TemplateError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, pe.Reason, te.Error())
		})
	}
}

func TestNoValueIsAnError(t *testing.T) {
	stores := map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ingress("default", "web", "h", "s"))}
	tests := []struct {
		name, cfg string
		opts      []specOpt
		template  string
		line      int
	}{
		{name: "missing extraContext key", cfg: "global\n  maxconn {{ .extraContext.maxconn }}\n", template: "haproxy.cfg", line: 2},
		{name: "missing object key", cfg: "a\nb\n{{ range .resources.ingresses.List }}server {{ .spec.defaultBackend }}{{ end }}", template: "haproxy.cfg", line: 3},
		{name: "index of a missing key", cfg: "x", opts: []specOpt{withMap("m", "\n\n\n{{ index .extraContext \"nope\" }}")}, template: "map:m", line: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustEngine(t, tt.cfg, tt.opts...).Render(context.Background(), Input{Stores: stores})
			pe := renderErr(t, err)
			nv, ok := pe.Err.(*NoValueError)
			require.True(t, ok, "Err is %T", pe.Err)
			assert.Equal(t, tt.template, nv.Template)
			assert.Equal(t, tt.line, nv.OutputLine)
			assert.Contains(t, pe.Reason, `a missing value was rendered as "<no value>"`)
		})
	}
	// Missing values are fine where they are not printed.
	b, err := mustEngine(t, `{{ if .extraContext.x }}x{{ end }}{{ .extraContext.y | default "dflt" }}{{ with .extraContext.z }}z{{ end }}`).Render(context.Background(), Input{})
	require.NoError(t, err)
	assert.Equal(t, "dflt", b.Config)
}

func TestLocateIsRobust(t *testing.T) {
	// Node text containing ">: " does not confuse the function-error path.
	_, err := mustEngine(t, `{{ fail (printf "%s" "a>: b") }}`).Render(context.Background(), Input{})
	assert.Equal(t, "a>: b", renderErr(t, err).Reason)
	_, err = mustEngine(t, "\n{{ pathFor \"map\" \"x>: y\" }}").Render(context.Background(), Input{})
	assert.Equal(t, `template haproxy.cfg line 2: pathFor map "x>: y": no such map in spec.maps`, renderErr(t, err).Reason)
}
