package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCarriedRecordsApplyOnlyWhereTheFragmentsReachIsTheSame(t *testing.T) {
	_, set := fragmentStores(t)
	const cfg = `{{ fragments "f" .resources.ingresses }}`
	base := []specOpt{
		withSnippet("f", `[{{ .item.metadata.name }} {{ include "g" . }} {{ template "h" . }}]`),
		withSnippet("g", `<{{ include "k" . }}>`),
		withSnippet("k", `k1 {{ .extraContext.port }}`),
		withSnippet("h", `h1`),
		withSnippet("u", `unused`),
		withMap("m", `m`),
		withExtra(`{"port": 80}`),
	}
	computed := withSnippet("f", `[{{ .item.metadata.name }} {{ include (print "g") . }}]`)
	tests := []struct {
		name         string
		oldCfg, cfg  string
		old, changed []specOpt
		baseDir      string
		carried      bool
	}{
		{name: "haproxy.cfg changed outside the fragment", cfg: cfg + "\nglobal\n", carried: true},
		{name: "a snippet the fragment does not reach changed", changed: []specOpt{withSnippet("u", "other")}, carried: true},
		{name: "a map's template changed", changed: []specOpt{withMap("m", "other")}, carried: true},
		{name: "the fragment's template changed", changed: []specOpt{withSnippet("f", `({{ .item.metadata.name }})`)}},
		{name: "a snippet it includes changed", changed: []specOpt{withSnippet("g", `<<{{ include "k" . }}>>`)}},
		{name: "a snippet it includes through another changed", changed: []specOpt{withSnippet("k", `k2 {{ .extraContext.port }}`)}},
		{name: "a template it calls changed", changed: []specOpt{withSnippet("h", `h2`)}},
		{name: "an include of a computed name, whose template changed", old: []specOpt{computed}, changed: []specOpt{computed, withSnippet("g", `<<{{ include "k" . }}>>`)}},
		{name: "extraContext changed", changed: []specOpt{withExtra(`{"port": 81}`)}},
		{name: "an output was added", changed: []specOpt{withMap("n", `n`)}},
		{name: "another BaseDir", baseDir: "/other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldCfg, newCfg := cfg, cfg
			if tt.cfg != "" {
				newCfg = tt.cfg
			}
			live := mustEngine(t, oldCfg, append(append([]specOpt{}, base...), tt.old...)...)
			_, err := live.Render(context.Background(), Input{Stores: set, BaseDir: "/b", Record: true})
			require.NoError(t, err)

			opts := append(append(append([]specOpt{}, base...), tt.old...), tt.changed...)
			proposed, fresh := mustEngine(t, newCfg, opts...), mustEngine(t, newCfg, opts...)
			proposed.Carry(live)
			baseDir := "/b"
			if tt.baseDir != "" {
				baseDir = tt.baseDir
			}
			got, err := proposed.Render(context.Background(), Input{Stores: set, BaseDir: baseDir})
			require.NoError(t, err)
			want, err := fresh.Render(context.Background(), Input{Stores: set, BaseDir: baseDir, Full: true})
			require.NoError(t, err)
			assert.Equal(t, want.Hash(), got.Hash(), "the carried render is the full render")
			st := proposed.FragmentStats()
			if tt.carried {
				assert.Equal(t, FragmentStats{Reused: 2, Carried: 2}, st, "both records applied")
			} else {
				assert.Equal(t, FragmentStats{Ran: 2}, st, "no record applied")
			}
		})
	}
}

func TestAnEngineThatRecordsForgetsTheCarriedRecords(t *testing.T) {
	_, set := fragmentStores(t)
	opts := []specOpt{withSnippet("f", `[{{ .item.metadata.name }}]`)}
	live, proposed := mustEngine(t, `{{ fragments "f" .resources.ingresses }}`, opts...), mustEngine(t, `{{ fragments "f" .resources.ingresses }}`, opts...)
	_, err := live.Render(context.Background(), Input{Stores: set, Record: true})
	require.NoError(t, err)
	require.Positive(t, proposed.Carry(live))
	_, err = proposed.Render(context.Background(), Input{Stores: set, Record: true})
	require.NoError(t, err)
	_, err = proposed.Render(context.Background(), Input{Stores: set})
	require.NoError(t, err)
	assert.Equal(t, FragmentStats{Reused: 4, Carried: 2}, proposed.FragmentStats(), "the second render applies the engine's own records")
	assert.Nil(t, proposed.carried.Load())
}
