package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// The maps of the differential test besides hosts.map (read by map(), a
// tree): one per kind of lookup the libraries use, each read by a fixed
// line of the frontend, and one read by an exact and a list lookup. The
// walk adds entries at the end, in the middle and twice, changes and
// removes one or two, and moves one; a request for lookup.example answers
// with every lookup's result for its path.

// dpMap is a map of the walk: its name and the converters reading it.
type dpMap struct {
	name  string
	convs []string
	tree  bool // read only from trees: its order does not matter
	keys  []string
}

var dpMaps = []dpMap{
	{name: "beg.map", convs: []string{"map_beg"}, tree: true, keys: []string{"/", "/a", "/a/", "/a/b", "/a/b/c", "/ab", "/b", "/c"}},
	{name: "reg.map", convs: []string{"map_reg"}, keys: []string{"^/a", "^/a/b", "b$", "c", "^/$", "a.*c", "/b/"}},
	{name: "end.map", convs: []string{"map_end"}, keys: []string{"a", "/a", "b", "/b", "c", "b/c"}},
	{name: "sub.map", convs: []string{"map_sub"}, keys: []string{"a", "b/", "/c", "ab", "x"}},
	{name: "dom.map", convs: []string{"map_dom"}, keys: []string{"a", "b", "c", "a.b"}},
	{name: "mixed.map", convs: []string{"map_str", "map_end"}, keys: []string{"/a", "/b", "/a/b", "b", "/c"}},
}

// dpLookupPaths are the paths asked of lookup.example.
var dpLookupPaths = []string{"/", "/a", "/a/", "/a/b", "/a/b/c", "/ab", "/abc", "/b", "/b/c", "/c", "/x/b", "/a.b/c", "/xa"}

var dpValues = []string{"v1", "v2", "v3", "a b;c"}

type dpEntry struct{ key, value string }

// lookupLine is the frontend line that answers lookup.example.
func lookupLine(dir string) string {
	var parts []string
	for _, mp := range dpMaps {
		for _, c := range mp.convs {
			parts = append(parts, fmt.Sprintf("%s=%%[path,%s(%s,-)]", strings.TrimSuffix(mp.name, ".map")+"/"+c, c, bundle.Path(dir, bundle.KindMap, mp.name)))
		}
	}
	return `  http-request return status 200 content-type text/plain lf-string "` + strings.Join(parts, " ") + `" if { req.hdr(host),field(1,:) -m str lookup.example }` + "\n"
}

// renderLists adds the walk's maps to maps.
func renderLists(m *dpModel, maps map[string]string) {
	for _, mp := range dpMaps {
		var b strings.Builder
		for _, e := range m.lists[mp.name] {
			fmt.Fprintf(&b, "%s %s\n", e.key, e.value)
		}
		maps[mp.name] = b.String()
	}
}

// stepList makes one change to one of the walk's maps.
func stepList(r *rand.Rand, m *dpModel) {
	mp := dpMaps[r.IntN(len(dpMaps))]
	l := m.lists[mp.name]
	value := func() string { return dpValues[r.IntN(len(dpValues))] }
	var unused []string
	for _, k := range mp.keys {
		if !slices.ContainsFunc(l, func(e dpEntry) bool { return e.key == k }) {
			unused = append(unused, k)
		}
	}
	op := r.IntN(8)
	switch {
	case len(l) == 0 || op <= 1 && len(unused) > 0: // a new key at the end
		if len(unused) > 0 {
			l = append(l, dpEntry{unused[r.IntN(len(unused))], value()})
		}
	case op == 2 && len(unused) > 0: // a new key anywhere
		l = slices.Insert(l, r.IntN(len(l)+1), dpEntry{unused[r.IntN(len(unused))], value()})
	case op == 3: // a key the map has, again
		l = slices.Insert(l, r.IntN(len(l)+1), dpEntry{l[r.IntN(len(l))].key, value()})
	case op == 4: // a value changed
		i := r.IntN(len(l))
		l[i].value = value()
	case op == 5: // an entry removed
		i := r.IntN(len(l))
		l = slices.Delete(l, i, i+1)
	case op == 6: // two entries changed
		l = append(l, dpEntry{l[r.IntN(len(l))].key, value()})
		i := r.IntN(len(l))
		l[i].value = dpValues[(slices.Index(dpValues, l[i].value)+1)%len(dpValues)]
	default: // an entry moved to the end
		i := r.IntN(len(l))
		e := l[i]
		l = append(slices.Delete(l, i, i+1), e)
	}
	m.lists[mp.name] = l
}

// compareLists checks that both instances hold the same maps (in the same
// order, but for the maps read from trees) and look paths up alike.
func compareLists(t *testing.T, step string, rt, rl *instance) {
	t.Helper()
	for _, mp := range append([]dpMap{{name: "hosts.map", tree: true}}, dpMaps...) {
		show := func(h *instance) []string {
			a, err := h.session.Do(t.Context(), "show map "+bundle.Path(h.dir, bundle.KindMap, mp.name), "")
			require.NoError(t, err)
			var lines []string
			for l := range strings.Lines(a) {
				_, rest, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
				lines = append(lines, rest)
			}
			if mp.tree { // by key, the entries of one key in their order
				slices.SortStableFunc(lines, func(a, b string) int {
					ka, _, _ := strings.Cut(a, " ")
					kb, _, _ := strings.Cut(b, " ")
					return strings.Compare(ka, kb)
				})
			}
			return lines
		}
		require.Equal(t, show(rl), show(rt), "%s: show map %s", step, mp.name)
	}
	for _, path := range dpLookupPaths {
		var bodies []string
		for _, h := range []*instance{rt, rl} {
			code, body := h.getPath(t, "lookup.example", path)
			require.Equal(t, http.StatusOK, code, "%s: %s on %s: %s", step, path, h.dir, body)
			bodies = append(bodies, body)
		}
		require.Equal(t, bodies[1], bodies[0], "%s: the lookups of %s", step, path)
	}
}

// recorder counts the map commands Apply sends: one entry's (add map
// without a version, set map, del map) and whole maps' (prepare map).
type recorder struct {
	c           Commander
	mu          sync.Mutex
	entry, full int
}

func (r *recorder) Do(ctx context.Context, cmd, payload string) (string, error) {
	r.mu.Lock()
	switch {
	case strings.HasPrefix(cmd, "prepare map "):
		r.full++
	case strings.HasPrefix(cmd, "set map "), strings.HasPrefix(cmd, "del map "),
		strings.HasPrefix(cmd, "add map ") && !strings.HasPrefix(cmd, "add map @"):
		r.entry++
	}
	r.mu.Unlock()
	return r.c.Do(ctx, cmd, payload)
}

// mapSeeds and mapSteps bound the walk of TestMapEditsMatchWholeMaps: a
// step is a few runtime commands and lookups, no reload.
var mapSeeds = []uint64{1, 2, 3}

const mapSteps = 40

// TestMapEditsMatchWholeMaps walks the maps only, longer than
// TestRuntimeAppliesMatchReloads can: each step applies one or two changes
// in one real HAProxy 3.0 as Apply does (one command where mapDelta allows
// it) and in another by replacing every changed map whole (prepare map,
// add map @version, commit map: TestRuntimeAppliesMatchReloads compares
// that with reloads); after every step both hold the same maps, Verify
// finds the files in both, and both answer the lookups alike. At the end
// the second reloads and is compared again.
func TestMapEditsMatchWholeMaps(t *testing.T) {
	bin := haproxy30(t)
	f := &dpFixture{}
	for i := range 2 {
		f.certs = append(f.certs, testutil.SelfSigned(t, fmt.Sprintf("site%d", i), time.Now().Add(time.Hour)))
		f.cas = append(f.cas, testutil.SelfSigned(t, fmt.Sprintf("ca%d", i), time.Now().Add(time.Hour)))
	}
	for _, seed := range mapSeeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			rt, whole := newInstance(t), newInstance(t)
			m := newModel()
			rtOld, wholeOld := f.render(m, rt), f.render(m, whole)
			rt.start(t, bin, rtOld)
			whole.start(t, bin, wholeOld)
			rec := &recorder{c: rt.session}
			for i := range mapSteps {
				next := m.clone()
				for range 1 + r.IntN(4)/3 {
					stepList(r, next)
				}
				rtNew, wholeNew := f.render(next, rt), f.render(next, whole)
				plan, reason := Diff(rtOld, rtNew)
				require.Nil(t, reason, "step %d", i)
				require.NoError(t, bundle.Write(rt.dir, rtNew))
				_, err := plan.Apply(t.Context(), rec)
				require.NoError(t, err, "step %d", i)
				plan, reason = Diff(wholeOld, wholeNew)
				require.Nil(t, reason, "step %d", i)
				for j := range plan.Files {
					plan.Files[j].order = mapUnknown // replaced whole
				}
				require.NoError(t, bundle.Write(whole.dir, wholeNew))
				_, err = plan.Apply(t.Context(), whole.session)
				require.NoError(t, err, "step %d", i)
				step := fmt.Sprintf("step %d", i)
				for _, x := range []struct {
					h *instance
					b *bundle.Bundle
				}{{rt, rtNew}, {whole, wholeNew}} {
					mm, err := Verify(t.Context(), x.h.session, x.b)
					require.NoError(t, err)
					require.Empty(t, mm, "%s: %s runs its files", step, x.h.dir)
				}
				compareLists(t, step, rt, whole)
				m, rtOld, wholeOld = next, rtNew, wholeNew
			}
			whole.reload(t, wholeOld)
			compareLists(t, "after a reload", rt, whole)
			t.Logf("%d steps: maps changed by one command %d times, replaced whole %d times", mapSteps, rec.entry, rec.full)
			require.Positive(t, rec.entry, "the walk changed a map by one command")
			require.Positive(t, rec.full, "the walk replaced a map whole")
		})
	}
}

// TestVerifyComparesTheOrderOfMapsReadInOrder: an entry removed and added
// again at run time goes to the end of the map; Verify reports it for a
// map read by a list lookup (map_reg: the first match wins), not for one
// read only from trees (map(): exact keys).
func TestVerifyComparesTheOrderOfMapsReadInOrder(t *testing.T) {
	bin := haproxy30(t)
	cert := testutil.SelfSigned(t, "site", time.Now().Add(time.Hour))
	f := &dpFixture{certs: []testutil.Cert{cert}, cas: []testutil.Cert{cert}}
	h := newInstance(t)
	m := newModel()
	m.lists["reg.map"] = []dpEntry{{"^/a", "v1"}, {"b$", "v2"}}
	b := f.render(m, h)
	h.start(t, bin, b)
	for _, c := range []struct{ name, key, value string }{{"reg.map", "^/a", "v1"}, {"hosts.map", "h0.example", "be0"}} {
		path := bundle.Path(h.dir, bundle.KindMap, c.name)
		_, err := h.session.Do(t.Context(), "del map "+path+" "+cliWord(c.key), "")
		require.NoError(t, err)
		_, err = h.session.Do(t.Context(), "add map "+path, c.key+" "+c.value+"\n")
		require.NoError(t, err)
	}
	mm, err := Verify(t.Context(), h.session, b)
	require.NoError(t, err)
	require.Len(t, mm, 1)
	require.Contains(t, mm[0].What, "map reg.map:")
}
