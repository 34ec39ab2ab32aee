package admission_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// resourceOf is the resource of the case objects' kinds.
func resourceOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	return map[string]schema.GroupVersionResource{
		"ConfigMap": {Version: "v1", Resource: "configmaps"},
		"Service":   {Version: "v1", Resource: "services"},
		"Secret":    {Version: "v1", Resource: "secrets"},
	}[u.GetKind()]
}

// clusterOf returns the objects as the API server holds them (whole).
func clusterOf(t testing.TB, docs []string) watched.Objects {
	t.Helper()
	objs := watched.Objects{}
	for _, d := range docs {
		u := obj(t, d)
		objs[resourceOf(u)] = append(objs[resourceOf(u)], u)
	}
	return objs
}

// prunedAdmitter is an Admitter whose live state is live's pipeline over
// the cluster's objects as the controller's informers keep them (pruned
// to what live reads: dryrun.Pipeline.Keep), with its baseline, listing
// from the cluster's whole objects.
func prunedAdmitter(t testing.TB, live *dryrun.Pipeline, cluster watched.Objects) *admission.Admitter {
	t.Helper()
	st := &admission.State{Pipeline: live, Stores: map[string]*store.Store{}, Kept: map[string]*watched.Keep{}}
	for _, r := range live.Model.All() {
		keep := live.Keep(r.WatchKey())
		objs, err := cluster.List(context.Background(), r, keep)
		require.NoError(t, err)
		s, err := store.New(r.IndexBy)
		require.NoError(t, err)
		require.NoError(t, s.Replace(objs))
		st.Stores[r.Key], st.Kept[r.Key] = s, keep
	}
	a := &admission.Admitter{Env: testEnv(t), RevealLiveState: true, Source: cluster}
	a.SetState(st)
	a.SetBaseline(&admission.Baseline{Pipeline: live, Diagnosis: diagnosis(live.Diagnose(context.Background(), store.ReadOnly(st.Stores), dryrun.DiagnoseOptions{}))})
	return a
}

// fullVerdict is the full computation: p rendered over the cluster's whole
// objects and checked.
func fullVerdict(t testing.TB, p *dryrun.Pipeline, cluster watched.Objects) *dryrun.Verdict {
	t.Helper()
	stores := map[string]*store.Store{}
	for _, r := range p.Model.All() {
		objs, err := cluster.List(context.Background(), r, nil)
		require.NoError(t, err)
		s, err := store.New(r.IndexBy)
		require.NoError(t, err)
		require.NoError(t, s.Replace(objs))
		stores[r.Key] = s
	}
	return p.Check(context.Background(), store.ReadOnly(stores))
}

// A proposed config is judged over the objects it renders once applied,
// not over what the config in use keeps of them (issue 31): a field the
// config in use never reads, another index, selector or resource. Each
// case's decision is the full computation's: a full render of the
// proposed config over the whole objects, checked.
func TestProposedConfigIsJudgedOverWhatItReads(t *testing.T) {
	for _, tc := range testutil.ProposalCases() {
		t.Run(tc.Name, func(t *testing.T) {
			live := pipelineFor(t, testutil.ProposalConfig("htc-system", "htc", tc.Live))
			proposed := testutil.ProposalConfig("htc-system", "htc", tc.Proposed)
			cluster := clusterOf(t, tc.Objects)
			truth := fullVerdict(t, pipelineFor(t, proposed), cluster)
			require.Equal(t, tc.Allowed, truth.Passed(), "the case's expectation is the full computation's: %s", truth.Reason)
			require.Equal(t, tc.Phase, string(truth.Phase), truth.Reason)

			d := decided(context.Background(), prunedAdmitter(t, live, cluster).Config, configReq(t, proposed))
			assert.Equal(t, tc.Allowed, d.Allowed, "reason: %s", d.Reason)
			assert.Equal(t, tc.Phase, string(d.Phase), "reason: %s", d.Reason)
			if !tc.Allowed {
				assert.Equal(t, truth.Reason, d.Reason, "denied for the reason a full render gives")
			}
		})
	}
}

// A proposed config is never judged over a partial view: when what it
// reads cannot be listed (no source, the deadline, the API server
// refusing), it is denied, saying so and what to do.
func TestProposedConfigThatCannotBeListedIsDenied(t *testing.T) {
	tc := testutil.ProposalCases()[1] // allowed over the whole objects
	live := pipelineFor(t, testutil.ProposalConfig("htc-system", "htc", tc.Live))
	proposed := configReq(t, testutil.ProposalConfig("htc-system", "htc", tc.Proposed))
	for _, c := range []struct {
		name   string
		source admission.Source
		reason string
	}{
		{"no source", nil, "the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them is not possible here"},
		{"a list that goes on", failingSource{admission.ErrStillListing},
			"the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them from the API server goes on after the admission deadline; apply it again in a moment"},
		{"the deadline", failingSource{context.DeadlineExceeded},
			"the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them from the API server did not finish before the admission deadline; apply it again"},
		{"another error", failingSource{errors.New("dial tcp 10.0.0.1:443: connection refused")},
			"the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them from the API server failed (the controller's log says why); apply it again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := prunedAdmitter(t, live, clusterOf(t, tc.Objects))
			a.Source = c.source
			d := decided(context.Background(), a.Config, proposed)
			assert.False(t, d.Allowed)
			assert.Equal(t, c.reason, d.Reason)
			assert.Nil(t, d.Verdict, "nothing was rendered")
		})
	}
}

// failingSource fails every list with err.
type failingSource struct{ err error }

func (f failingSource) Store(context.Context, watched.Resource, *watched.Keep) (*store.Store, error) {
	return nil, f.err
}

// A proposed config that reads what the live stores keep, the same way,
// renders over them: nothing is listed.
func TestProposedConfigReadingWhatIsKeptListsNothing(t *testing.T) {
	tc := testutil.ProposalCases()[0]
	live := pipelineFor(t, testutil.ProposalConfig("htc-system", "htc", tc.Proposed))
	a := prunedAdmitter(t, live, clusterOf(t, tc.Objects))
	a.Source = failingSource{errors.New("listed")}
	d := decided(context.Background(), a.Config, configReq(t, testutil.ProposalConfig("htc-system", "htc", tc.Live)))
	assert.True(t, d.Allowed, d.Reason)
}
