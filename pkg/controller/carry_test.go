package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// TestConfigAdmissionWithCarriedRecordsIsChecked: a config UPDATE that
// changes haproxy.cfg only, admitted through the webhook's wrapper,
// renders with the live round's fragment records (no fragment runs), and
// the shadow checks render the proposed config in full when the
// controller is idle: they agree, and carrying stays on.
func TestConfigAdmissionWithCarriedRecordsIsChecked(t *testing.T) {
	f := newShortcutFixture(t, nil)
	st := f.c.admitter.State()
	kept := map[string]*watched.Keep{}
	for key := range st.Stores {
		kept[key] = nil // whole objects: the proposed config renders over the live stores
	}
	f.c.admitter.SetState(&admission.State{Pipeline: st.Pipeline, Stores: st.Stores, Kept: kept})
	require.True(t, f.c.live.sync(t.Context()))

	u := shortcutConfig()
	require.NoError(t, unstructured.SetNestedField(u.Object, shortcutTemplate+"# a config UPDATE\n", "spec", "haproxyConfig", "template"))
	req := admission.Request{Change: watched.Change{Resource: configGVR, Operation: store.Update, Object: u, OldObject: shortcutConfig()}}
	d, r := f.c.observed("config", f.c.admitter.Decide, false).Admit(t.Context(), req)
	require.True(t, d.Allowed, d.Reason)
	require.NotNil(t, r.Proposed)
	stats := r.Proposed.FragmentStats()
	assert.Equal(t, int64(2), stats.Carried, "both Services' backends applied from the live round's records")
	assert.Zero(t, stats.Ran)

	f.c.shadow.Idle()
	f.waitChecks(t, shortcut.Carry, shadow.ResultAgreed, 1)
	assert.Zero(t, f.mismatches(shortcut.Carry))
	assert.True(t, f.c.switches.On(shortcut.Carry))
}
