package webhook

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
)

func TestFromDecisionCarriesCauses(t *testing.T) {
	ing := bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "team-a", Name: "web"}
	d := admission.Deny(phase.Render, "Ingress team-a/web: Service 'api' not found")
	d.Introduced = []dryrun.Failure{{Phase: phase.Render, Objects: []bundle.ObjectRef{ing}, Reason: "Service 'api' not found"}}
	resp := FromDecision("u", d)
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, []metav1.StatusCause{{Type: "htc/render", Field: "Ingress team-a/web", Message: "Service 'api' not found"}}, resp.Result.Details.Causes)
	assert.Equal(t, "Ingress team-a/web: Service 'api' not found", resp.Result.Message)

	// A denial before any check (a timeout, a config that does not
	// validate) still names its phase.
	resp = FromDecision("u", admission.Deny(phase.Config, "spec.watchedResources: Required value"))
	assert.Equal(t, []metav1.StatusCause{{Type: "htc/config", Message: "spec.watchedResources: Required value"}}, resp.Result.Details.Causes)

	resp = FromDecision("u", admission.Allow("w1"))
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Result)
	assert.Equal(t, []string{"w1"}, resp.Warnings)
}

func TestWarningsAreCutOnRuneBoundaries(t *testing.T) {
	long := strings.Repeat("é", maxWarningLen)
	resp := allowedResponse("u", long)
	require.Len(t, resp.Warnings, 1)
	assert.True(t, utf8.ValidString(resp.Warnings[0]))
	assert.LessOrEqual(t, len(resp.Warnings[0]), maxWarningLen)
}
