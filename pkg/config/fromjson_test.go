package config_test

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
)

// fromJSONCorpus is JSON the webhook may be handed as a config's object:
// the example libraries (with examples: too large to fuzz), the minimal
// config, and variants of it that are
// refused (an unknown field at each depth, a wrong type, a wrong kind,
// fixtures and extraContext of every JSON type, numbers that are not
// integers where an integer goes).
func fromJSONCorpus(tb testing.TB, examples bool) [][]byte {
	tb.Helper()
	var out [][]byte
	add := func(y string) {
		js, err := yaml.YAMLToJSON([]byte(y))
		require.NoError(tb, err)
		out = append(out, js)
	}
	if examples {
		paths, err := filepath.Glob("../../examples/*/config.yaml")
		require.NoError(tb, err)
		require.NotEmpty(tb, paths)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(tb, err)
			add(string(b))
		}
	}
	add(minimal)
	head := "apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: htc, namespace: htc-system}\n"
	for _, y := range []string{
		head + "spec: {haproxyConfig: {template: x}, bogus: 1}",
		head + "bogus: 1\nspec: {haproxyConfig: {template: x}}",
		head + "spec: {haproxyConfig: {template: x, bogus: 1}}",
		head + "spec: {haproxyConfig: {template: 1}}",
		head + "spec: {haproxyConfig: {template: null}}",
		head + "spec: null",
		head + "spec: []",
		head + "spec: {watchedResources: {a: {apiVersion: v1, resources: services, indexBy: [metadata.name], bogus: x}}}",
		head + "spec: {watchedResources: {a: {apiVersion: v1, resources: services, indexBy: metadata.name}}}",
		head + "spec: {extraContext: {a: 1, b: [1.5, x, null, true], c: {d: 1e3}}}",
		head + "spec: {validationTests: {t: {fixtures: {s: [{kind: Service, n: 1.0}, 7, null]}, assertions: [{type: contains, pattern: x}]}}}",
		head + "spec: {validationTests: {t: {assertions: [{type: contains, pattern: x, bogus: y}]}}}",
		head + "spec: {maxBundleBytes: 1.5}",
		head + "spec: {maxBundleBytes: 10}",
		head + "spec: {maxBundleBytes: \"10\"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nspec: {}",
		"apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: htc, bogus: 1}\nspec: {}",
		"apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: htc, labels: {a: 1}}\nspec: {}",
		"apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: htc, creationTimestamp: \"2026-01-02T03:04:05Z\", generation: 3}\nspec: {}",
		"apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: htc}\nspec: {}\nstatus: {conditions: [{type: Valid, status: \"True\", lastTransitionTime: \"2026-01-02T03:04:05Z\", reason: R, message: m}]}",
	} {
		add(y)
	}
	// What encoding/json/v2 and sigs.k8s.io/json may read apart: invalid
	// UTF-8, names in another case, numbers that are not integers, null.
	js := `{"apiVersion":"haproxy-template.io/v1alpha1","kind":"HAProxyTemplateConfig","metadata":{"name":"htc"%s},"spec":{%s}}`
	for _, parts := range [][2]string{
		{``, `"haproxyConfig":{"template":"a` + "\xff" + `b"}`},
		{``, `"haproxyConfig":{"template":"a` + "\xed\xa0\x80" + `b"}`},
		{``, `"HAProxyConfig":{"template":"x"}`},
		{``, `"haproxyConfig":{"Template":"x"}`},
		{`,"generation":1.0`, ``},
		{`,"generation":1e2`, ``},
		{`,"generation":"1"`, ``},
		{`,"creationTimestamp":null,"labels":null`, `"haproxyConfig":null,"maps":{"a":null}`},
		{`,"creationTimestamp":"2026-01-02T03:04:05Z"`, `"extraContext":{"a":"` + "\xff" + `"}`},
		{``, `"validationTests":{"t":{"assertions":[{"type":"contains","pattern":"x","count":1.5}]}}`},
	} {
		out = append(out, []byte(fmt.Sprintf(js, parts[0], parts[1])))
	}
	return out
}

// fromJSONAgrees fails when FromJSON(js) and FromUnstructured of js
// decoded as the webhook decodes an object (integers as int64) disagree:
// one refuses what the other admits, or they decode different configs.
// The differences allowed are FromJSON's refusals of duplicate fields (a
// map lets the last win) and of an integer written 1e2 or 1.0 (the map's
// float64 converts): the API server sends neither.
func fromJSONAgrees(t *testing.T, js []byte) {
	var m map[string]any
	if utiljson.Unmarshal(js, &m) != nil || m == nil {
		return // the webhook refuses it before either runs
	}
	want, wantErr := config.FromUnstructured(&unstructured.Unstructured{Object: m})
	got, gotErr := config.FromJSON(js)
	if gotErr != nil && hasDuplicateNames(js) {
		return // refused, whatever the map made of it
	}
	if gotErr != nil && wantErr == nil && strings.Contains(gotErr.Error(), "cannot unmarshal number") {
		return // 1e2 or 1.0 for an integer: the map's float64 converts, FromJSON refuses it
	}
	require.Equal(t, wantErr == nil, gotErr == nil, "FromUnstructured: %v; FromJSON: %v; of %s", wantErr, gotErr, js)
	if wantErr != nil && runtime.IsStrictDecodingError(errors.Unwrap(wantErr)) {
		// reported alike, though FromJSON's path names map keys too
		// (spec.validationTests.t.assertions[0].bogus, not ….validationTests.assertions…)
		require.True(t, runtime.IsStrictDecodingError(errors.Unwrap(gotErr)), "FromUnstructured: %v; FromJSON: %v", wantErr, gotErr)
	}
	if gotErr == nil {
		canonicalRaw(t, got)
	}
	require.Equal(t, want, got, "of %s", js)
}

// canonicalRaw rewrites cfg's embedded objects (extraContext, fixtures)
// as FromUnstructured has them: the map's JSON encoding (sorted keys, no
// spaces, the last of duplicate names). FromJSON keeps their bytes as
// sent, which denote the same JSON values (the API server sends them in
// that encoding already; when it does not, Spec.Hash differs, and the
// embedded tests' results are computed again rather than reused).
func canonicalRaw(t *testing.T, cfg *config.HAProxyTemplateConfig) {
	canonical := func(r *runtime.RawExtension) {
		if r.Raw == nil { // null
			return
		}
		var v any
		require.NoError(t, utiljson.Unmarshal(r.Raw, &v))
		b, err := json.Marshal(v)
		require.NoError(t, err)
		r.Raw = b
	}
	if cfg.Spec.ExtraContext != nil {
		canonical(cfg.Spec.ExtraContext)
	}
	for _, tc := range cfg.Spec.ValidationTests {
		for _, objs := range tc.Fixtures {
			for i := range objs {
				canonical(&objs[i])
			}
		}
	}
}

// hasDuplicateNames reports whether an object in js names a member twice.
func hasDuplicateNames(js []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(js), jsontext.AllowInvalidUTF8(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			_, dup := err.(*jsontext.SyntacticError)
			return dup && bytes.Contains([]byte(err.Error()), []byte("duplicate"))
		}
	}
}

func TestFromJSONDecodesAsFromUnstructured(t *testing.T) {
	for _, js := range fromJSONCorpus(t, true) {
		fromJSONAgrees(t, js)
	}
}

func TestFromJSONRefusesWhatFromUnstructuredRefuses(t *testing.T) {
	head := `{"apiVersion":"haproxy-template.io/v1alpha1","kind":"HAProxyTemplateConfig","metadata":{"name":"htc","namespace":"ns"},`
	for name, tc := range map[string]struct{ js, want string }{
		"an unknown field names its path": {head + `"spec":{"haproxyConfig":{"template":"x","bogus":1}}}`, `unknown field "spec.haproxyConfig.bogus"`},
		"a wrong kind":                    {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, "not a haproxy-template.io/v1alpha1 HAProxyTemplateConfig"},
		"a wrong type":                    {head + `"spec":{"haproxyConfig":{"template":1}}}`, "decoding HAProxyTemplateConfig"},
		"a duplicate field":               {head + `"spec":{"haproxyConfig":{"template":"x","template":"y"}}}`, `duplicate field "spec.haproxyConfig.template"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.FromJSON([]byte(tc.js))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func FuzzFromJSONDecodesAsFromUnstructured(f *testing.F) {
	for _, js := range fromJSONCorpus(f, false) {
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		fromJSONAgrees(t, js)
	})
}
