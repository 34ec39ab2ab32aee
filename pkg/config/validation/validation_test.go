package validation_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/render"
)

const base = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name]}
    endpoints: {apiVersion: discovery.k8s.io/v1, resources: endpointslices, indexBy: [metadata.namespace, "metadata.labels['kubernetes.io/service-name']"]}
  haproxyConfig: {template: "global\n"}
  maps: {host.map: {template: ""}}
  templateSnippets: {snip: {template: "x"}}
  validationTests:
    ok:
      fixtures: {ingresses: []}
      assertions: [{type: contains, target: "map:host.map", pattern: "x"}]
`

// edit applies a textual replacement to the base document.
func validate(t *testing.T, from, to string) []string {
	t.Helper()
	doc := base
	if from != "" {
		require.Contains(t, doc, from)
		doc = strings.Replace(doc, from, to, 1)
	}
	cfg, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	var msgs []string
	for _, e := range validation.Validate(cfg) {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

func TestValidConfig(t *testing.T) {
	assert.Empty(t, validate(t, "", ""))
}

func TestValidationNamesTheField(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"missing apiVersion", "{apiVersion: networking.k8s.io/v1, resources: ingresses,", "{resources: ingresses,", "spec.watchedResources[ingresses].apiVersion: Required value"},
		{"bad apiVersion", "apiVersion: networking.k8s.io/v1,", "apiVersion: a/b/c,", "spec.watchedResources[ingresses].apiVersion: Invalid value"},
		{"missing resources", "resources: ingresses, ", "", "spec.watchedResources[ingresses].resources: Required value"},
		{"kind instead of resources", "resources: ingresses,", "resources: Ingress,", `spec.watchedResources[ingresses].resources: Invalid value: "Ingress": must be a lower-case plural`},
		{"missing indexBy", "indexBy: [metadata.namespace, metadata.name]", "indexBy: []", "spec.watchedResources[ingresses].indexBy: Required value"},
		{"malformed indexBy", "indexBy: [metadata.namespace, metadata.name]", "indexBy: [metadata.namespace, \"metadata.labels[\"]", "spec.watchedResources[ingresses].indexBy[1]: Invalid value: \"metadata.labels[\""},
		{"bad field selector", "resources: ingresses,", "resources: ingresses, fieldSelector: \"metadata.name\",", "spec.watchedResources[ingresses].fieldSelector: Invalid value"},
		{"webhookOperations without webhookValidation", "resources: ingresses,", "resources: ingresses, webhookOperations: [DELETE],", "spec.watchedResources[ingresses].webhookOperations: Invalid value: [\"DELETE\"]: has no effect without webhookValidation: true"},
		{"unknown webhook operation", "resources: ingresses,", "resources: ingresses, webhookValidation: true, webhookOperations: [DELETE, CONNECT],", `spec.watchedResources[ingresses].webhookOperations[1]: Unsupported value: "CONNECT"`},
		{"webhook operation twice", "resources: ingresses,", "resources: ingresses, webhookValidation: true, webhookOperations: [DELETE, DELETE],", `spec.watchedResources[ingresses].webhookOperations[1]: Duplicate value: "DELETE"`},
		{"bad label selector", "resources: ingresses,", "resources: ingresses, labelSelector: {matchExpressions: [{key: a, operator: Bogus}]},", "spec.watchedResources[ingresses].labelSelector"},
		{"empty haproxy template", `haproxyConfig: {template: "global\n"}`, `haproxyConfig: {template: "  "}`, "spec.haproxyConfig.template: Required value"},
		{"template does not parse", `haproxyConfig: {template: "global\n"}`, `haproxyConfig: {template: "global\n{{ if }}\n"}`, "spec.haproxyConfig.template: Invalid value: \"template haproxy.cfg line 2\""},
		{"snippet does not parse", `snip: {template: "x"}`, `snip: {template: "{{ end }}"}`, "spec.templateSnippets[snip].template: Invalid value: \"template snip line 1\""},
		{"map does not parse", `host.map: {template: ""}`, `host.map: {template: "{{ .x"}`, "spec.maps[host.map].template"},
		{"map name escapes", `host.map: {template: ""}`, `../host.map: {template: ""}`, "spec.maps[../host.map]: Invalid value"},
		{"unknown assertion type", "type: contains,", "type: regex,", `spec.validationTests[ok].assertions[0].type: Unsupported value: "regex"`},
		{"unknown target kind", `target: "map:host.map"`, `target: "lua:x"`, `spec.validationTests[ok].assertions[0].target: Invalid value: "lua:x": unknown target kind "lua"`},
		{"target without kind", `target: "map:host.map"`, `target: "host.map"`, `spec.validationTests[ok].assertions[0].target: Invalid value: "host.map": must be "haproxy.cfg"`},
		{"bad regex", `pattern: "x"`, `pattern: "("`, "spec.validationTests[ok].assertions[0].pattern: Invalid value"},
		{"missing pattern", `, pattern: "x"`, ``, "spec.validationTests[ok].assertions[0].pattern: Required value"},
		{"fixtures for an unwatched store", "fixtures: {ingresses: []}", "fixtures: {secrets: []}", "spec.validationTests[ok].fixtures[secrets]: Not found"},
		{"no assertions", `assertions: [{type: contains, target: "map:host.map", pattern: "x"}]`, "assertions: []", "spec.validationTests[ok].assertions: Required value"},
		{"match_count without count", `type: contains, target: "map:host.map"`, `type: match_count, target: "map:host.map"`, "spec.validationTests[ok].assertions[0].count: Required value"},
		{"jsonpath that does not parse", `{type: contains, target: "map:host.map", pattern: "x"}`, `{type: jsonpath, jsonpath: "{.a[", expected: ""}`, "spec.validationTests[ok].assertions[0].jsonpath: Invalid value"},
		{"unknown allowed directive", "  validationTests:", "  allowedDirectives: [lua-lod]\n  validationTests:", `spec.allowedDirectives[0]: Unsupported value: "lua-lod"`},
		{"relative allowed path", "  validationTests:", "  allowedDirectives: [\"path:etc\"]\n  validationTests:", `spec.allowedDirectives[0]: Invalid value: "path:etc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := validate(t, tc.from, tc.to)
			require.NotEmpty(t, msgs)
			assert.Contains(t, strings.Join(msgs, "\n"), tc.want)
		})
	}
}

func TestAllowedDirectivesAccepted(t *testing.T) {
	assert.Empty(t, validate(t, "  validationTests:", "  allowedDirectives: [lua-load, env-expansion, \"path:/etc/ssl/certs\"]\n  validationTests:"))
}

// TestValidateEngineWithAMemoIsValidate: a config validated with a Memo
// its patterns and templates are kept in, the first time and again, gets
// Validate's findings.
func TestValidateEngineWithAMemoIsValidate(t *testing.T) {
	memo := validation.Memo{Templates: render.NewTemplates(4), Patterns: validation.NewPatterns(16)}
	for _, tc := range []struct{ name, from, to string }{
		{"valid", "", ""},
		{"bad regex", `pattern: "x"`, `pattern: "("`},
		{"bad regex in match_order", `{type: contains, target: "map:host.map", pattern: "x"}`, `{type: match_order, target: "map:host.map", patterns: ["a", "[z-a]", "(?z)"]}`},
		{"the same pattern valid in one assertion, in another too", `[{type: contains, target: "map:host.map", pattern: "x"}]`, `[{type: contains, target: "map:host.map", pattern: "x"}, {type: not_contains, target: "map:host.map", pattern: "x"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := validate(t, tc.from, tc.to)
			cfg, err := config.Parse([]byte(strings.Replace(base, tc.from, tc.to, 1)))
			require.NoError(t, err)
			for _, round := range []string{"first", "again"} {
				errs, _ := validation.ValidateEngine(cfg, memo)
				var got []string
				for _, e := range errs {
					got = append(got, e.Error())
				}
				assert.Equal(t, want, got, round)
			}
		})
	}
}
