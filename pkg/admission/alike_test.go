package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// withLabels returns u with labels and an annotation added.
func withLabels(u *unstructured.Unstructured, labels map[string]string) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetLabels(labels)
	u.SetAnnotations(map[string]string{"note": "relabelled"})
	return u
}

// A change that keeps every field the templates read (here: an Ingress's
// labels and annotations, which the routing config never reads) is
// admitted without a check; any other is checked. What the change keeps
// alike is judged against the stored object, not the request's oldObject.
func TestChangesTheTemplatesDoNotReadAreAdmittedUnchecked(t *testing.T) {
	ctx := context.Background()
	echo := func() *unstructured.Unstructured { return obj(t, ingress(t, "echo", "echo.example.com", "echo")) }
	for _, tc := range []struct {
		name      string
		req       admission.Request
		alike     bool
		allowed   bool
		checkedBy bool // a verdict is behind the decision
	}{
		{"labels and annotations of an Ingress", req(ingressesGVR, store.Update, withLabels(echo(), map[string]string{"team": "a"}), echo()), true, true, false},
		{"a label of a Service (the config reads Services whole)", req(servicesGVR, store.Update, withLabels(obj(t, service("echo", "")), map[string]string{"routed": "yes", "team": "a"}), obj(t, service("echo", ""))), false, true, true},
		{"the host of an Ingress", req(ingressesGVR, store.Update, obj(t, ingress(t, "echo", "other.example.com", "echo")), echo()), false, true, true},
		{"the Service of an Ingress, to a missing one", req(ingressesGVR, store.Update, obj(t, ingress(t, "echo", "echo.example.com", "gone")), echo()), false, false, true},
		{"labels, with a stale oldObject: compared with the store", req(ingressesGVR, store.Update, withLabels(echo(), map[string]string{"team": "a"}),
			obj(t, ingress(t, "echo", "stale.example.com", "gone"))), true, true, false},
		{"labels of an oldObject the store no longer has", req(ingressesGVR, store.Update, withLabels(obj(t, ingress(t, "echo", "stale.example.com", "echo")), map[string]string{"team": "a"}),
			echo()), false, true, true},
		{"a CREATE is always checked", req(ingressesGVR, store.Create, withLabels(obj(t, ingress(t, "new", "new.example.com", "echo")), nil), nil), false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := newValidator(t)
			d := decided(ctx, v.Decide, tc.req)
			assert.Equal(t, tc.alike, d.RendersAlike)
			assert.Equal(t, tc.allowed, d.Allowed, d.Reason)
			assert.Equal(t, tc.checkedBy, d.Verdict != nil)
		})
	}
}

// An unchecked change still warns about what was failing before it, as a
// checked one does.
func TestUncheckedChangeWarnsAboutExistingFailures(t *testing.T) {
	ctx := context.Background()
	v, stores := newValidator(t)
	require.NoError(t, stores["ingresses"].Add(obj(t, ingress(t, "broken", "broken.example.com", "missing"))))
	st := v.State()
	base, _ := st.Pipeline.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{})
	require.Len(t, base.Failures, 1)
	v.SetBaseline(&admission.Baseline{Pipeline: st.Pipeline, Diagnosis: base})

	echo := obj(t, ingress(t, "echo", "echo.example.com", "echo"))
	d := decided(ctx, v.Decide, req(ingressesGVR, store.Update, withLabels(echo, map[string]string{"team": "a"}), echo))
	require.True(t, d.RendersAlike)
	assert.True(t, d.Allowed)
	require.Len(t, d.Warnings, 1)
	assert.Equal(t, "failing before this change (not denied): Service 'missing' not found", d.Warnings[0])
	assert.Len(t, d.Existing, 1)

	// The same labels on the broken Ingress itself: it stays broken,
	// which is a warning, not a denial.
	broken := obj(t, ingress(t, "broken", "broken.example.com", "missing"))
	d = decided(ctx, v.Decide, req(ingressesGVR, store.Update, withLabels(broken, map[string]string{"team": "a"}), broken))
	require.True(t, d.RendersAlike)
	assert.True(t, d.Allowed)
	assert.Len(t, d.Warnings, 1)
}
