package render

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// TestFusedChannelReadsReturnWhatTheCallsTheyReplaceReturn: len, keys,
// values, fragments, get and hasKey of (emitted X) and len of (emitted X
// P), which New rewrites, give what they
// give for the same channel read through a variable (not rewritten), and
// so do join and printf "%s\n" of the values (joinedValues), alone or
// concatenated with an empty list or another: for
// a channel with entries (dicts, nil, strings), one never emitted on, and a channel over the
// recording render's changed by a proposal (an ingress added first,
// between, last, deleted, changed) or not (a Service added), in full and
// incremental renders.
func TestFusedChannelReadsReturnWhatTheCallsTheyReplaceReturn(t *testing.T) {
	emits := `{{ fragments "f" .resources.ingresses }}`
	opts := []specOpt{
		withSnippet("f", `{{ emit "c" .item.metadata.name .item.spec }}{{ emit "n" (printf "k-%s" .item.metadata.name) nil }}{{ emit "s" .item.metadata.name (printf "%s %s" .item.metadata.name (index .item.spec.rules 0).host) }}{{ emit "t" .item.metadata.name .item.metadata.name }}`),
		withSnippet("g", `[{{ .key }}:{{ toJson .item }}]`),
	}
	for _, tc := range []struct{ name, fused, plain string }{
		{"len", `{{ len (emitted CH) }}`, `{{ $m := emitted CH }}{{ len $m }}`},
		{"keys", `{{ toJson (keys (emitted CH)) }} {{ keys (emitted CH) | kindOf }}`, `{{ $m := emitted CH }}{{ toJson (keys $m) }} {{ keys $m | kindOf }}`},
		{"values", `{{ toJson (values (emitted CH)) }} {{ printf "%v" (values (emitted CH)) }}`, `{{ $m := emitted CH }}{{ toJson (values $m) }} {{ printf "%v" (values $m) }}`},
		{"fragments", `{{ fragments "g" (emitted CH) }}`, `{{ $m := emitted CH }}{{ fragments "g" $m }}`},
		{"get", `{{ range $k := list "a" "b" "0" "k-a" "none" }}{{ toJson (get (emitted CH) $k) }};{{ end }}`, `{{ $m := emitted CH }}{{ range $k := list "a" "b" "0" "k-a" "none" }}{{ toJson (get $m $k) }};{{ end }}`},
		{"join", `{{ $t := join "\n" (values (emitted CH)) }}{{ printf "%s\n" $t }}|{{ printf "%s\n" (trunc 3 $t) }}|{{ join "\n" (values (emitted CH)) | printf "%s\n" }}|{{ join "," (values (emitted CH)) }}|{{ join "\n" (concat (values (emitted CH)) (list)) }}|{{ join "\n" (concat (values (emitted CH)) (list "x")) }}`, `{{ $m := emitted CH }}{{ $t := join "\n" (values $m) }}{{ printf "%s\n" $t }}|{{ printf "%s\n" (trunc 3 $t) }}|{{ join "\n" (values $m) | printf "%s\n" }}|{{ join "," (values $m) }}|{{ join "\n" (concat (values $m) (list)) }}|{{ join "\n" (concat (values $m) (list "x")) }}`},
		{"lenPrefix", `{{ range $p := list "" "a" "b" "k-" "k-a" "z" "none" }}{{ len (emitted CH $p) }};{{ end }}`, `{{ range $p := list "" "a" "b" "k-" "k-a" "z" "none" }}{{ $m := emitted CH $p }}{{ len $m }};{{ end }}`},
		{"hasKey", `{{ range $k := list "a" "b" "0" "k-a" "none" }}{{ hasKey (emitted CH) $k }};{{ end }}`, `{{ $m := emitted CH }}{{ range $k := list "a" "b" "0" "k-a" "none" }}{{ hasKey $m $k }};{{ end }}`},
	} {
		for _, ch := range []string{`"c"`, `"n"`, `"s"`, `"t"`, `"never"`} {
			t.Run(tc.name+" "+ch, func(t *testing.T) {
				fused := mustEngine(t, emits+strings.ReplaceAll(tc.fused, "CH", ch), opts...)
				plain := mustEngine(t, emits+strings.ReplaceAll(tc.plain, "CH", ch), opts...)
				fn := "emitted" + strings.ToUpper(tc.name[:1]) + tc.name[1:]
				if tc.name == "join" {
					fn = "emittedValues"
				}
				if tc.name == "lenPrefix" {
					fn = "emittedLenPrefix"
				}
				require.Contains(t, fused.root.Lookup("haproxy.cfg").Root.String(), fn, "rewritten")
				if tc.name == "join" {
					require.Contains(t, fused.root.Lookup("haproxy.cfg").Root.String(), "emittedJoin", "rewritten")
				}
				require.NotContains(t, plain.root.Lookup("haproxy.cfg").Root.String(), fn, "not rewritten")
				stores, set := fragmentStores(t)
				for _, e := range []*Engine{fused, plain} {
					renderText(t, e, Input{Stores: set, BaseDir: "/b", Record: true})
				}
				require.Equal(t, renderText(t, plain, Input{Stores: set, BaseDir: "/b", Full: true}), renderText(t, fused, Input{Stores: set, BaseDir: "/b", Full: true}))
				for _, p := range []struct {
					op  store.Operation
					obj string
				}{{store.Create, "0"}, {store.Create, "aa"}, {store.Create, "z"}, {store.Delete, "a"}, {store.Update, "b"}} {
					obj := &unstructured.Unstructured{Object: ingress("ns", p.obj, "x.example.com", "svc-x")}
					change := store.Change{Operation: p.op, Object: obj}
					if p.op != store.Create {
						old, ok := stores["ingresses"].ByName("ns", p.obj)
						require.True(t, ok)
						change.OldObject = old
						if p.op == store.Delete {
							change.Object = old
						}
					}
					proposal, err := set.WithChange("ingresses", change)
					require.NoError(t, err)
					want := renderText(t, plain, Input{Stores: proposal, BaseDir: "/b"})
					assert.Equal(t, want, renderText(t, plain, Input{Stores: proposal, BaseDir: "/b", Full: true}), "%v %s", p.op, p.obj)
					assert.Equal(t, want, renderText(t, fused, Input{Stores: proposal, BaseDir: "/b"}), "%v %s", p.op, p.obj)
				}
				// A change no fragment reads: every channel is the recording render's.
				proposal, err := set.WithChange("services", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: service("ns", "svc-new")}})
				require.NoError(t, err)
				assert.Equal(t, renderText(t, plain, Input{Stores: proposal, BaseDir: "/b"}), renderText(t, fused, Input{Stores: proposal, BaseDir: "/b"}), "a new Service")
			})
		}
	}
}

// TestFusedChannelReadsFailAsTheCallsTheyReplace: a fused read in a
// fragment fails with emitted's message, and fragments over a channel
// with fragments' when its template does not exist; a template cannot
// call a fused function itself.
func TestFusedChannelReadsFailAsTheCallsTheyReplace(t *testing.T) {
	_, set := fragmentStores(t)
	for _, tc := range []struct{ name, cfg, want string }{
		{"read in a fragment", `{{ fragments "r" (list 1) }}`, `emitted "c": a fragment cannot read a channel`},
		{"fragments of no template", `{{ fragments "nothing" (emitted "c") }}`, `fragments "nothing": no such template`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.cfg, withSnippet("r", `{{ values (emitted "c") }}`))
			_, err := e.Render(context.Background(), Input{Stores: set, BaseDir: "/b"})
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := New(newSpec(`{{ emittedValues "c" }}`))
	assert.ErrorContains(t, err, `function "emittedValues" not defined`)
}
