package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// ngxJoinedRegexHosts is the condition under which the ingress-nginx
// library's haproxy.cfg joins the regex hosts' lines its Ingresses'
// summaries emitted instead of looping over every regex host.
const ngxJoinedRegexHosts = `{{- if and (len (emitted "lineservers")) (eq (len (emitted "hostings")) (len (emitted "lineservers"))) }}`

// ngxRegexHostsBy puts, in place of the joining's condition, cond: false
// (every regex host by the loop), or a branch of its own.
func ngxRegexHostsBy(t *testing.T, cond string) func(*config.HAProxyTemplateConfigSpec) {
	return func(spec *config.HAProxyTemplateConfigSpec) {
		require.Equal(t, 1, strings.Count(spec.HAProxyConfig.Template, ngxJoinedRegexHosts), "haproxy.cfg's regex hosts joining")
		spec.HAProxyConfig.Template = strings.Replace(spec.HAProxyConfig.Template, ngxJoinedRegexHosts, cond, 1)
	}
}

// TestNginxRegexHostsJoinedAsTheLoopWritesThem: when no host has lines of
// two Ingresses, the ingress-nginx library writes regex.map,
// regexservers.map, rxexact.map and rxprefix.map by joining what each
// Ingress's regex summary emitted, without a loop over the regex hosts
// (config.yaml, "The hosts where an Ingress uses use-regex"). The library
// with that shortcut off (the loop over every regex host, always) renders
// the same bundle byte for byte (source map and status included), the
// same warnings, or the same failure, over every validation test's
// fixtures and generated states (hosts of one Ingress and shared ones,
// regex hosts of literal paths, of overlapping ones, a rewrite-target
// equal to its path); and each generated state, walked through Ingress
// creations, updates and deletions rendered as an admission renders them
// (over the records of a recording render of the state before), renders
// as in full.
func TestNginxRegexHostsJoinedAsTheLoopWritesThem(t *testing.T) {
	current, cfg := ngxEngine(t, nil)
	loop, _ := ngxEngineWith(t, nil, ngxRegexHostsBy(t, "{{- if false }}"))
	// joined fails where the library joins: how often the states tried it
	joined, _ := ngxEngineWith(t, nil, ngxRegexHostsBy(t, ngxJoinedRegexHosts+`{{ fail "joined" }}`))
	var extra struct {
		Annotations map[string]map[string]any `json:"annotations"`
	}
	require.NoError(t, json.Unmarshal(cfg.Spec.ExtraContext.Raw, &extra))
	outcomes := map[string]int{}
	joins := func(objs map[string][]map[string]any) bool {
		_, err := joined.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: "/b", Full: true})
		return err != nil && strings.Contains(err.Error(), "joined")
	}
	compare := func(objs map[string][]map[string]any, what string) {
		outcome := compareNginxRenders(t, current, loop, cfg, objs, what)
		if joins(objs) {
			if regexHost(objs) {
				outcome += ", joined regex hosts"
			} else {
				outcome += ", joined"
			}
		}
		outcomes[outcome]++
	}
	for name, tc := range cfg.Spec.ValidationTests {
		objs := map[string][]map[string]any{}
		for key, raws := range tc.Fixtures {
			for _, raw := range raws {
				o := map[string]any{}
				require.NoError(t, json.Unmarshal(raw.Raw, &o), name)
				objs[key] = append(objs[key], o)
			}
		}
		compare(objs, "validation test "+name)
	}
	steps := 0
	for i := range 60 {
		r := rand.New(rand.NewPCG(uint64(i), 35))
		objs := generateNginxState(r, 2+i%6, extra.Annotations)
		regexHeavy(r, objs)
		what := fmt.Sprintf("state %d", i)
		compare(objs, what)
		// The state walked through changes of its Ingresses, each
		// rendered over the records of the state before, and compared
		// with the loop's full render too.
		live := gatewayStores(t, cfg, objs)
		render1 := func(set store.Set, in htcrender.Input) string {
			in.Stores, in.BaseDir = set, "/b"
			return exactly(current.Render(context.Background(), in))
		}
		render1(store.ReadOnly(live), htcrender.Input{Record: true})
		for step := range 6 {
			change := nextNginxIngressChange(r, objs, extra.Annotations, i*10+step)
			proposal, err := store.ReadOnly(live).WithChange("ingresses", change)
			require.NoError(t, err)
			want := render1(proposal, htcrender.Input{Full: true})
			require.Equal(t, want, render1(proposal, htcrender.Input{}), "%s step %d: a proposed %s", what, step, change.Operation)
			testutil.ApplyChange(t, live["ingresses"], change)
			compare(objs, fmt.Sprintf("%s step %d", what, step))
			render1(store.ReadOnly(live), htcrender.Input{Record: true})
			steps++
		}
	}
	t.Logf("outcomes: %v", outcomes)
	assert.Greater(t, outcomes["renders, joined regex hosts"]+outcomes["warns, joined regex hosts"], 40, "many render regex hosts joined")
	assert.Greater(t, outcomes["renders"]+outcomes["warns"], 40, "many render regex hosts by the loop")
	assert.Positive(t, current.FragmentStats().Reused, "the admissions' renders reused records")
}

// regexHeavy makes half the Ingresses of a generated state, canaries
// aside, regex ones: use-regex, rewrite-target or both in place of their
// annotations, a quarter of them with a path of a regular expression no
// exact or prefix string says (/v[0-9]+); or gives them a rewrite-target
// "/" and their first rule the one path "/" (its paths read as regular
// expressions, its host no regex host by it).
func regexHeavy(r *rand.Rand, objs map[string][]map[string]any) {
	pfx := "nginx.ingress.kubernetes.io/"
	for _, ing := range objs["ingresses"] {
		md := ing["metadata"].(map[string]any)
		if ann, _ := md["annotations"].(map[string]any); ann[pfx+"canary"] != nil || r.IntN(2) == 0 {
			continue
		}
		k := r.IntN(4)
		md["annotations"] = []map[string]any{
			{pfx + "use-regex": "true"},
			{pfx + "rewrite-target": "/$2"},
			{pfx + "use-regex": "true", pfx + "rewrite-target": "/"},
			{pfx + "rewrite-target": "/"},
		}[k]
		rules, _ := ing["spec"].(map[string]any)["rules"].([]any)
		if len(rules) == 0 {
			continue
		}
		http, _ := rules[0].(map[string]any)["http"].(map[string]any)
		if ps, _ := http["paths"].([]any); len(ps) == 0 {
			continue
		}
		ps := http["paths"].([]any)
		switch {
		case k == 3: // its first rule's paths: "/", the target: not a regex host by this Ingress
			ps[0].(map[string]any)["path"] = "/"
			http["paths"] = ps[:1]
		case r.IntN(4) == 0:
			ps[0].(map[string]any)["path"] = "/v[0-9]+"
		}
	}
}

// regexHost reports whether a generated state has an Ingress of regex
// paths (use-regex or rewrite-target).
func regexHost(objs map[string][]map[string]any) bool {
	for _, ing := range objs["ingresses"] {
		ann, _ := ing["metadata"].(map[string]any)["annotations"].(map[string]any)
		pfx := "nginx.ingress.kubernetes.io/"
		if ann[pfx+"use-regex"] == "true" || ann[pfx+"rewrite-target"] != nil {
			return true
		}
	}
	return false
}

// nextNginxIngressChange changes objs' Ingresses (and returns the
// change): an Ingress of another generated state added (named after n),
// one deleted, or one given another's spec and annotations.
func nextNginxIngressChange(r *rand.Rand, objs map[string][]map[string]any, table map[string]map[string]any, n int) store.Change {
	state := generateNginxState(r, 4, table)
	regexHeavy(r, state)
	other := state["ingresses"]
	fresh := other[r.IntN(len(other))]
	list := objs["ingresses"]
	if len(list) == 0 || r.IntN(3) == 0 {
		fresh["metadata"].(map[string]any)["name"] = fmt.Sprintf("new%d", n)
		objs["ingresses"] = append(list, fresh)
		return store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: fresh}}
	}
	i := r.IntN(len(list))
	old := list[i]
	if r.IntN(4) == 0 {
		objs["ingresses"] = append(list[:i:i], list[i+1:]...)
		return store.Change{Operation: store.Delete, OldObject: &unstructured.Unstructured{Object: old}}
	}
	om := old["metadata"].(map[string]any)
	md := map[string]any{"name": om["name"], "namespace": om["namespace"]}
	if a := fresh["metadata"].(map[string]any)["annotations"]; a != nil {
		md["annotations"] = a
	}
	upd := map[string]any{"apiVersion": old["apiVersion"], "kind": old["kind"], "metadata": md, "spec": fresh["spec"]}
	objs["ingresses"] = append(append(list[:i:i], upd), list[i+1:]...)
	return store.Change{Operation: store.Update, Object: &unstructured.Unstructured{Object: upd}, OldObject: &unstructured.Unstructured{Object: old}}
}
