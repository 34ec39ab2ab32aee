package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// viewTemplate fails with the view it has of every Service and Ingress:
// kind, name, annotations and managedFields, as JSON.
const viewTemplate = `{{- $view := list }}
{{- range $o := .resources.services.List }}{{ $view = append $view (list $o.kind $o.metadata.name $o.metadata.annotations $o.metadata.managedFields) }}{{ end }}
{{- range $o := .resources.ingresses.List }}{{ $view = append $view (list $o.kind $o.metadata.name $o.metadata.annotations $o.metadata.managedFields) }}{{ end }}
{{- if .resources.ingresses.List }}{{ fail (printf "view %s" (toJson $view)) }}{{ end }}
global
  maxconn 10
`

// viewObjects are a Service and an Ingress as the API server holds them
// after kubectl apply: managedFields, the last-applied annotation, and an
// annotation of their own.
func viewObjects() (service, ingress *unstructured.Unstructured) {
	withBookkeeping := func(u *unstructured.Unstructured, team string) *unstructured.Unstructured {
		u.SetNamespace("default")
		u.SetAnnotations(map[string]string{watched.LastAppliedAnnotation: `{"apiVersion":"v1"}`, "team": team})
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}})
		return u
	}
	service = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"}}}
	ingress = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"name": "x"}}}
	return withBookkeeping(service, "a"), withBookkeeping(ingress, "b")
}

// wantView is the view every entry point must render: the annotations of
// their own, no last-applied copy, no managedFields.
const wantView = `view [["Service","web",{"team":"a"},null],["Ingress","x",{"team":"b"},null]]`

var viewPattern = regexp.MustCompile(`view \[.*\]\]`)

// TestOneObjectView: htc render and htc check over state manifests, the
// fixtures of htc validate, and the webhook over the stores the
// controller's informers fill (their transform) all show a template the
// same object: without managedFields and without kubectl's last-applied
// annotation (watched.Trim), with every other annotation.
func TestOneObjectView(t *testing.T) {
	svc, ing := viewObjects()
	dir := t.TempDir()
	manifest := func(name string, objs ...*unstructured.Unstructured) string {
		var buf bytes.Buffer
		for _, o := range objs {
			b, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			buf.WriteString("---\n")
			buf.Write(b)
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
		return p
	}
	cfg := viewConfig(t, svc, ing)
	cfgPath := filepath.Join(dir, "config.yaml")
	cfgYAML, err := yaml.Marshal(cfg.Object)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, cfgYAML, 0o600))

	views := map[string]string{}
	_, _, stderr := htc(t, "render", "-f", cfgPath, "--state", manifest("both.yaml", svc, ing))
	views["htc render"] = viewPattern.FindString(stderr)

	_, out, stderr := htc(t, "check", "-f", cfgPath, "--state", manifest("service.yaml", svc), "--object", manifest("ingress.yaml", ing), "--test-cache", "")
	views["htc check"] = viewPattern.FindString(out + stderr)

	_, out, stderr = htc(t, "validate", "-f", cfgPath)
	views["htc validate (fixtures)"] = viewPattern.FindString(out + stderr)

	views["webhook over the controller's stores"] = viewPattern.FindString(webhookView(t, cfgPath, svc, ing))

	for entry, view := range views {
		assert.Equal(t, wantView, view, "%s renders another view of the objects", entry)
	}
}

// viewConfig is a config of viewTemplate whose embedded test has svc and
// ing as fixtures.
func viewConfig(t *testing.T, svc, ing *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc"},
		"spec": map[string]any{
			"watchedResources": map[string]any{
				"ingresses": map[string]any{"apiVersion": "networking.k8s.io/v1", "resources": "ingresses", "indexBy": []any{"metadata.namespace", "metadata.name"}, "webhookValidation": true},
				"services":  map[string]any{"apiVersion": "v1", "resources": "services", "indexBy": []any{"metadata.namespace", "metadata.name"}},
			},
			"haproxyConfig": map[string]any{"template": viewTemplate},
			"validationTests": map[string]any{"view": map[string]any{
				"fixtures":   map[string]any{"services": []any{svc.Object}, "ingresses": []any{ing.Object}},
				"assertions": []any{map[string]any{"type": "haproxy_valid"}},
			}},
		},
	}}
}

// webhookView posts the CREATE of ing as an AdmissionReview to the
// webhook's handler, whose admitter judges it over stores filled as the
// controller's informers fill them (the store's Keep transform, with svc
// in it), and returns the denial reason.
func webhookView(t *testing.T, cfgPath string, svc, ing *unstructured.Unstructured) string {
	t.Helper()
	cfg, err := config.LoadFile(cfgPath)
	require.NoError(t, err)
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	env := dryrun.Env{CheckerFor: func(a []string) dryrun.Checker { return checker.Allowing(a) }}
	p, err := dryrun.Build(cfg, env)
	require.NoError(t, err)
	stores := p.Model.NewStores()
	for _, r := range p.Model.All() {
		if r.Key != "services" {
			continue
		}
		// The informer transform of the controller's store of r.
		transform := r.Keep(p.Reads().Paths(r.Key)).SharingTransform(watched.NewShareTable(0))
		obj, err := transform(svc.DeepCopy())
		require.NoError(t, err)
		require.NoError(t, stores[r.Key].Add(obj.(*unstructured.Unstructured)))
	}
	a := &admission.Admitter{Env: env}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	handler := webhook.NewHandler(webhook.HandlerOptions{Registry: webhook.NewRegistry(map[string]webhook.Validator{
		"networking.k8s.io/v1.Ingress": webhook.ValidatorFunc(a.Decide),
	})})

	raw, err := json.Marshal(ing.Object)
	require.NoError(t, err)
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "view",
			Kind:      metav1.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
			Resource:  metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
			Name:      ing.GetName(),
			Namespace: ing.GetNamespace(),
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(review))
	req.Header.Set("Content-Type", "application/json")
	handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var resp admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	require.NotNil(t, resp.Response)
	require.NotNil(t, resp.Response.Result)
	assert.False(t, resp.Response.Allowed)
	return resp.Response.Result.Message
}
