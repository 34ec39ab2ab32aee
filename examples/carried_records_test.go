package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// carryLibrary is one example library over a generated state, with a live
// engine whose last render recorded its fragments (what a config UPDATE's
// admission carries records from).
type carryLibrary struct {
	name  string
	cfg   *config.HAProxyTemplateConfig
	live  *htcrender.Engine
	state map[string]*store.Store
}

// carryLibraries are the plain Ingress and the ingress-nginx libraries
// over 10 Ingresses with make bench-scale's annotation mix.
func carryLibraries(t testing.TB) []*carryLibrary {
	t.Helper()
	var out []*carryLibrary
	for _, lib := range []struct{ name, path, class string }{{"ingress", "ingress/config.yaml", "htc"}, {"ingress-nginx", ngxConfigPath, "nginx"}} {
		cfg, err := config.LoadFile(lib.path)
		require.NoError(t, err)
		state := dataPlaneState(10, 8080)
		for i, ing := range state["ingresses"] {
			ing["spec"].(map[string]any)["ingressClassName"] = lib.class
			scaleMix(ing, i, lib.class == "nginx")
		}
		l := &carryLibrary{name: lib.name, cfg: cfg, state: gatewayStores(t, cfg, state)}
		l.live, err = htcrender.New(&cfg.Spec)
		require.NoError(t, err)
		_, err = l.live.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(l.state), BaseDir: "/b", Record: true})
		require.NoError(t, err)
		out = append(out, l)
	}
	return out
}

// carryChange is a config UPDATE: what it changes (op) in which template
// (target, an index into the spec's templates in name order).
type carryChange struct {
	op, target uint8
}

// The config UPDATEs carryChange makes.
const (
	appendNothing   = iota // the same spec
	appendSpace            // a space after the template: a visible change
	appendNewline          // a line after it
	appendComment          // a template comment: another text, the same output
	appendText             // a word after it
	computedInclude        // its first include's name computed (print "name")
	newInclude             // it includes a new snippet
	extraContextKey        // a key added to extraContext
	newMap                 // a map added (another output name)
	carryOps
)

// templateNames are the spec's template names, in order: "haproxy.cfg",
// then "map:", "file:", "cert:" and snippet names.
func templateNames(spec *config.HAProxyTemplateConfigSpec) []string {
	names := []string{bundle.ConfigFileName}
	for _, g := range []struct {
		kind bundle.Kind
		m    map[string]config.Template
	}{{bundle.KindMap, spec.Maps}, {bundle.KindFile, spec.Files}, {bundle.KindCert, spec.SSLCertificates}} {
		for _, n := range slices.Sorted(maps.Keys(g.m)) {
			names = append(names, htcrender.TemplateName(g.kind, n))
		}
	}
	return append(names, slices.Sorted(maps.Keys(spec.TemplateSnippets))...)
}

// templateText is the text of the template called name in spec.
func templateText(spec *config.HAProxyTemplateConfigSpec, name string) string {
	kind, n, _ := strings.Cut(name, ":")
	switch {
	case name == bundle.ConfigFileName:
		return spec.HAProxyConfig.Template
	case kind == string(bundle.KindMap) && n != "":
		return spec.Maps[n].Template
	case kind == string(bundle.KindFile) && n != "":
		return spec.Files[n].Template
	case kind == string(bundle.KindCert) && n != "":
		return spec.SSLCertificates[n].Template
	}
	return spec.TemplateSnippets[name].Template
}

var firstInclude = regexp.MustCompile(`include "([^"]+)"`)

// apply returns spec changed as c says, and the name of the template it
// changed ("" for none).
func (c carryChange) apply(t testing.TB, spec *config.HAProxyTemplateConfigSpec) (*config.HAProxyTemplateConfigSpec, string) {
	t.Helper()
	out := spec.DeepCopy()
	names := templateNames(out)
	target := names[int(c.target)%len(names)]
	edit := func(f func(string) string) {
		text := config.Template{Template: f(templateText(out, target))}
		kind, name, _ := strings.Cut(target, ":")
		switch {
		case target == bundle.ConfigFileName:
			out.HAProxyConfig = text
		case kind == string(bundle.KindMap) && name != "":
			out.Maps[name] = text
		case kind == string(bundle.KindFile) && name != "":
			out.Files[name] = text
		case kind == string(bundle.KindCert) && name != "":
			out.SSLCertificates[name] = text
		default:
			out.TemplateSnippets[target] = text
		}
	}
	switch c.op % carryOps {
	case appendNothing:
		return out, ""
	case appendSpace:
		edit(func(s string) string { return s + " " })
	case appendNewline:
		edit(func(s string) string { return s + "\n" })
	case appendComment:
		edit(func(s string) string { return s + "{{/* carried? */}}" })
	case appendText:
		edit(func(s string) string { return s + "X" })
	case computedInclude:
		edit(func(s string) string {
			m := firstInclude.FindStringIndex(s)
			if m == nil {
				return s + `{{ include (print "carry-probe") . }}`
			}
			return s[:m[0]] + firstInclude.ReplaceAllString(s[m[0]:m[1]], `include (print "$1")`) + s[m[1]:]
		})
		out.TemplateSnippets["carry-probe"] = config.Template{Template: "probe"}
	case newInclude:
		out.TemplateSnippets["carry-probe"] = config.Template{Template: "probe"}
		edit(func(s string) string { return s + `{{ include "carry-probe" . }}` })
	case extraContextKey:
		extra := map[string]any{}
		if out.ExtraContext != nil && len(out.ExtraContext.Raw) > 0 {
			require.NoError(t, json.Unmarshal(out.ExtraContext.Raw, &extra))
		}
		extra["carryProbe"] = int64(c.target)
		raw, err := json.Marshal(extra)
		require.NoError(t, err)
		out.ExtraContext = &runtime.RawExtension{Raw: raw}
		return out, ""
	case newMap:
		if out.Maps == nil {
			out.Maps = map[string]config.Template{}
		}
		out.Maps["carry-probe.map"] = config.Template{Template: "probe\n"}
		return out, ""
	}
	return out, target
}

// renderCarried renders spec over the library's state (an Ingress
// annotated, when changeIngress ≥ 0), once by a new engine that carried
// the live engine's records and then in full, and asserts the two give
// the same answer. It returns the carrying engine's
// fragment stats; ok is false when spec does not parse.
func (l *carryLibrary) renderCarried(t testing.TB, spec *config.HAProxyTemplateConfigSpec, changeIngress int) (htcrender.FragmentStats, bool) {
	t.Helper()
	proposed, err := htcrender.New(spec)
	if err != nil {
		return htcrender.FragmentStats{}, false
	}
	proposed.Carry(l.live)
	stores := store.ReadOnly(l.state)
	if changeIngress >= 0 {
		ings := l.state["ingresses"].List()
		old := ings[changeIngress%len(ings)]
		upd := old.DeepCopy()
		ann := upd.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["nginx.ingress.kubernetes.io/proxy-read-timeout"] = "301"
		upd.SetAnnotations(ann)
		stores, err = stores.WithChange("ingresses", store.Change{Operation: store.Update, Object: upd, OldObject: old})
		require.NoError(t, err)
	}
	ctx := context.Background()
	got, errGot := proposed.Render(ctx, htcrender.Input{Stores: stores, BaseDir: "/b"})
	stats := proposed.FragmentStats()
	// A new engine in full: nothing carried, no cache of the carried
	// render's (the status documents' decodings were carried too).
	fresh, err := htcrender.New(spec)
	require.NoError(t, err)
	want, errWant := fresh.Render(ctx, htcrender.Input{Stores: stores, BaseDir: "/b", Full: true})
	if errWant != nil {
		require.Error(t, errGot, "the full render fails: %v", errWant)
		assert.Equal(t, phase.Reason(errWant), phase.Reason(errGot))
		return stats, true
	}
	require.NoError(t, errGot, "the full render passes")
	assert.Equal(t, want.Hash(), got.Hash(), "the carried render is the full render, byte for byte")
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.Warnings, got.Warnings)
	return stats, true
}

// TestCarriedRecordsRenderAsANewEngine: config UPDATEs of the plain and
// the ingress-nginx libraries (each kind of change to haproxy.cfg and
// to every template a fragment reaches, extraContext, the outputs), over
// the live state and with an Ingress changed: the render of the new
// engine with the live engine's records is the full render, byte for
// byte. A change of nothing a fragment reaches applies every record; a
// visible change of a fragment's template applies none of its records.
func TestCarriedRecordsRenderAsANewEngine(t *testing.T) {
	for _, l := range carryLibraries(t) {
		names := templateNames(&l.cfg.Spec)
		for target := range names {
			// Every template with a word appended, with one other
			// change of its text (each kind in turn), its first include's
			// name computed, every other one with a new include; the
			// changes of the spec once.
			ops := []uint8{appendText, uint8(target % appendText)}
			if firstInclude.MatchString(templateText(&l.cfg.Spec, names[target])) {
				ops = append(ops, computedInclude)
			}
			if target%2 == 1 {
				ops = append(ops, newInclude)
			}
			if target == 0 {
				ops = append(ops, appendNothing, extraContextKey, newMap)
			}
			for _, op := range ops {
				c := carryChange{op: op, target: uint8(target)}
				spec, changed := c.apply(t, &l.cfg.Spec)
				t.Run(fmt.Sprintf("%s/%s/op%d", l.name, names[target], op), func(t *testing.T) {
					stats, ok := l.renderCarried(t, spec, -1)
					require.True(t, ok, "the change parses")
					switch {
					case op == appendNothing || (changed == bundle.ConfigFileName && op != computedInclude):
						assert.Zero(t, stats.Ran, "haproxy.cfg reaches no fragment: every record applies")
						assert.Positive(t, stats.Carried)
					case op >= extraContextKey:
						assert.Zero(t, stats.Carried, "another extraContext or output: nothing is carried")
					}
				})
			}
		}
		t.Run(l.name+"/an-ingress-changed", func(t *testing.T) {
			stats, _ := l.renderCarried(t, &l.cfg.Spec, 3)
			assert.Positive(t, stats.Ran, "the changed Ingress's fragment runs")
			assert.Positive(t, stats.Carried)
		})
	}
}

// FuzzCarriedRecordsRenderAsANewEngine: any config UPDATE of the kinds
// carryChange makes, of any template, over the live state or with an
// Ingress changed, renders with carried records as a new engine renders
// it in full.
func FuzzCarriedRecordsRenderAsANewEngine(f *testing.F) {
	f.Add(uint8(0), uint8(appendText), uint8(3), int8(-1))
	f.Add(uint8(1), uint8(computedInclude), uint8(7), int8(5))
	f.Add(uint8(1), uint8(newInclude), uint8(11), int8(-1))
	libs := carryLibraries(f)
	f.Fuzz(func(t *testing.T, lib, op, target uint8, changeIngress int8) {
		l := libs[int(lib)%len(libs)]
		spec, _ := carryChange{op: op, target: target}.apply(t, &l.cfg.Spec)
		l.renderCarried(t, spec, int(changeIngress))
	})
}
