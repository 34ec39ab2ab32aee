package dryrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestLiveChecksRecordForAdmissions checks the plumbing of incremental
// rendering: a check with Record (the live loop's) leaves fragment records
// that the render of a proposed change reuses, with the same bundle as a
// pipeline that never recorded; without Record nothing is reused.
func TestLiveChecksRecordForAdmissions(t *testing.T) {
	for _, record := range []bool{true, false} {
		ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Apps: 20})
		fresh := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Apps: 20})
		live := store.ReadOnly(ex.Stores)
		v, _ := ex.Pipeline.CheckWith(t.Context(), live, dryrun.CheckOptions{Record: record, SkipTests: true})
		require.NoError(t, v.Err)

		change := store.Change{Operation: store.Create, Object: testutil.ClusterIngress("ns1", "app1-new", "app1")}
		proposal, err := live.WithChange("ingresses", change)
		require.NoError(t, err)
		before := ex.Pipeline.FragmentStats()
		got, err := ex.Pipeline.Render(t.Context(), proposal)
		require.NoError(t, err)
		replayed := ex.Pipeline.FragmentStats().Reused - before.Reused

		freshProposal, err := store.ReadOnly(fresh.Stores).WithChange("ingresses", change)
		require.NoError(t, err)
		want, err := fresh.Pipeline.Render(t.Context(), freshProposal)
		require.NoError(t, err)
		require.Equal(t, want.Hash(), got.Hash(), "record %v", record)
		if record {
			require.Greater(t, replayed, int64(20), "the live check's fragments are reused")
		} else {
			require.Zero(t, replayed)
		}
	}
}
