package admission

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
)

// TestHiddenReasonSaysWhereEachFailureIs: every error a render or a check
// fails with says where it happened (phase.Located), wrapped as the
// pipeline wraps it, and a hidden reason names that place, never the
// message.
func TestHiddenReasonSaysWhereEachFailureIs(t *testing.T) {
	finding := []haproxy.Finding{{File: "maps/hosts.map", Line: 3, Message: "secret"}}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a template error", &render.TemplateError{Template: "haproxy.cfg", Line: 7, Message: "secret"}, "template haproxy.cfg line 7"},
		{"a template error without a line", &render.TemplateError{Template: "haproxy.cfg", Message: "secret"}, "template haproxy.cfg"},
		{"fail", &render.FailError{Template: "snip", Line: 2, Message: "secret"}, "template snip line 2"},
		{"a refused value", &render.ValueError{Template: "snip", Line: 4, Message: "secret"}, "template snip line 4"},
		{"a missing value printed", &render.NoValueError{Template: "haproxy.cfg", OutputLine: 9}, "template haproxy.cfg output line 9"},
		{"a policy finding", &policy.Error{Findings: finding}, "maps/hosts.map:3"},
		{"a syntax finding", &haproxy.SyntaxError{Findings: finding}, "maps/hosts.map:3"},
		{"a schema finding without a line", &haproxy.SchemaError{Findings: []haproxy.Finding{{File: "haproxy.cfg", Message: "secret"}}}, "haproxy.cfg"},
		{"a finding without a file", &haproxy.SyntaxError{Findings: []haproxy.Finding{{Message: "secret"}}}, ""},
		{"haproxy -c", &haproxy.SemanticError{Messages: []string{"haproxy.cfg:18: secret"}}, "haproxy.cfg:18"},
		{"haproxy -c without a place", &haproxy.SemanticError{Messages: []string{"secret"}}, ""},
		{"anything else", errors.New("secret"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := &phase.Error{Phase: phase.Render, Reason: "secret", Err: fmt.Errorf("wrapped: %w", tt.err)}
			got := hiddenReason(phase.Render, err)
			want := "the proposed configuration fails over the current resources in the render phase"
			if tt.want != "" {
				want += " at " + tt.want
			}
			assert.Equal(t, want, got)
			assert.NotContains(t, got, "secret")
		})
	}
}
