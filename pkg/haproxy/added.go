package haproxy

import (
	"context"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
	"github.com/haproxy-template/htc/pkg/phase"
)

// The map-only skip for backend sections a change adds (issue 34: a new
// Ingress whose backend settings make a backend of its own). A bundle N is
// accepted with no warning, without haproxy -c on the whole of it, when a
// bundle B haproxy -c accepted without a warning (one of addedRuns') and N are
// alike but for loose maps, alone maps (read only by map_reg or map_regm,
// policy.Report.AloneMaps, the same in both) and addable backend sections
// (addedKey), and N's haproxy.cfg is B's with whole backend sections inserted:
// with those taken out, N's sections are B's, unchanged and in order
// (sectionsSum, blank lines at a section's end aside). Each inserted section
// is addable (a header "backend NAME from DEFAULTS", DEFAULTS named by another
// proxy too (see addedTo), then only the keywords and
// server options of addableLine and addableServerOption: none that
// names a file, an id or a guid, or makes a stick table), named as no
// other section of N is; at most maxAdded of them, maxAddedBytes in all.
// haproxy -c must then accept without a warning the stub (stubSections):
// N without its frontend, listen and backend sections but the new ones,
// plus a listener of its own and, when an alone map's content differs from
// B's (changedAlone), a frontend loading each such map through its
// converter as the maps stub does (alone.go; one run checks both), with
// those maps and N's maps, files and certificates of the kinds the kept
// sections' text names (stubFiles: a kind it never names it cannot read).
// A stub that differs from one accepted so only in the added sections'
// names and servers' addresses is accepted without running (shapes.go).
//
// Why that is the whole check's answer: HAProxy reads a backend section in
// the context of the global section and the defaults sections (kept, in
// place), of the sections it names (kept, or absent: the stub fails) and
// of the other proxies' names (a new one is unique). The other sections
// were accepted without the new ones, and none of them can name them
// (B resolved every name it uses without them). The keywords admitted act
// inside their section only. An alone map HAProxy loads with nothing else
// of the configuration, by its converter (alone.go). Anything else (no such
// B, a line starting a conditional block or any "." directive, a section
// keyword config-parser does not cut at, the stub refused, warned or could
// not run) returns false: haproxy -c runs on the whole bundle, so the stub
// never denies. TestSectionsCheckedAloneAgainstHAProxy30 and
// TestSectionsAndMapsCheckedAloneAgainstHAProxy30 compare the verdicts;
// package shadow checks again what it accepted (map-only).
const (
	maxAdded      = 16
	maxAddedBytes = 64 << 10
	// addedKeys and addedPerKey bound addedRuns: keys, and accepted
	// bundles per key (the live one and proposals alike share a key).
	addedKeys   = 4
	addedPerKey = 4
	// stubListener names the stub's own frontend; stubMaps the one
	// that loads the changed alone maps.
	stubListener = "htc_sections_checked_alone"
	stubMaps     = "htc_maps_checked_alone"
)

// addedRuns remembers, for the bundles haproxy -c accepted without a
// warning, what acceptedAdded compares a bundle with: under addedKey, the
// last addedPerKey accepted bundles' haproxy.cfg (addedBase), newest
// first. The embedded tests' runs are not recorded (Checker.ForFixtures):
// of keys of their own, they would push the live configuration's out.
// Safe for concurrent use: lru.Cache is, a stored slice is never
// changed (record stores a new one, under mu so that none is lost).
type addedRuns struct {
	mu     sync.Mutex
	runs   *lru.Cache  // addedKey -> []*addedBase
	shapes *stubShapes // stubs accepted, by shapeKey (shapes.go)
	// learning is the live haproxy.cfg LearnShapes went through last (learn.go).
	learning shapeLearning
}

// addedBase is an accepted bundle's haproxy.cfg as acceptedAdded reads it:
// the sectionsSum of its sections and the sorted nameHash of its addable
// backend sections' names (a new name whose hash is one of them is taken
// for an old one: the sum then differs, and the stub does not run).
type addedBase struct {
	sum   [32]byte
	names []uint64
	alone map[string][32]byte // alone map -> digest of its content
}

func newAddedRuns() *addedRuns {
	return &addedRuns{runs: lru.New(addedKeys), shapes: newStubShapes()}
}

// has reports whether the base has an addable section named name.
func (b *addedBase) has(name string) bool {
	_, ok := slices.BinarySearch(b.names, nameHash(name))
	return ok
}

// nameHash is FNV-1a of a section name.
func nameHash(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// cfgParts is haproxy.cfg cut into sections (cutConfig), with which of
// them are addable backend sections (and the defaults section each names),
// how many sections have each name, and how many frontend, backend and
// listen sections name each defaults section in their header.
type cfgParts struct {
	secs     []*cfgSection
	addable  []bool
	from     []string
	names    map[string]int
	explicit map[string]int
}

// addedProbe is what Check learned about a bundle for the added-sections
// skip: its key (addedKey), its cut haproxy.cfg, its alone maps (name ->
// converter, policy.Report.AloneMaps) and their content's digests; key is
// "" when the skip does not apply (the bundle may run code, or
// haproxy.cfg has what cutConfig refuses).
type addedProbe struct {
	key       string
	parts     *cfgParts
	alone     map[string]string
	aloneSums map[string][32]byte
}

// probeAdded cuts b's haproxy.cfg and keys it; loose are the loose maps
// (nil: the bundle may run code, and the skip does not apply), alone the
// maps a stub can load alone (name -> converter).
func probeAdded(b *bundle.Bundle, loose map[string]bool, alone map[string]string) addedProbe {
	if loose == nil {
		return addedProbe{}
	}
	parts, ok := cutConfig(b.Config)
	if !ok {
		return addedProbe{}
	}
	sums := make(map[string][32]byte, len(alone))
	for name := range alone {
		k := contenthash.New()
		k.String(b.Maps[name])
		sums[name] = k.Sum256()
	}
	return addedProbe{key: addedKey(b, loose, alone, parts), parts: parts, alone: alone, aloneSums: sums}
}

// record keeps an accepted bundle's probe (one accepted without a warning:
// a reused run's warnings would name lines that moved).
func (a *addedRuns) record(p addedProbe, warnings []string) {
	if a == nil || p.key == "" || len(warnings) > 0 {
		return
	}
	base := &addedBase{sum: sectionsSum(p.parts, nil), alone: p.aloneSums}
	for i, s := range p.parts.secs {
		if p.parts.addable[i] {
			base.names = append(base.names, nameHash(s.name))
		}
	}
	slices.Sort(base.names)
	a.mu.Lock()
	defer a.mu.Unlock()
	bases := []*addedBase{base}
	if v, ok := a.runs.Get(p.key); ok {
		for _, old := range v.([]*addedBase) {
			if old.sum != base.sum && len(bases) < addedPerKey {
				bases = append(bases, old)
			}
		}
	}
	a.runs.Add(p.key, bases)
}

// touch puts base first among the bases of key, so that the base most
// changes are made to (the live configuration's) stays while proposals
// that ran haproxy -c come and go.
func (a *addedRuns) touch(key string, base *addedBase) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.runs.Get(key)
	if !ok || v.([]*addedBase)[0] == base {
		return
	}
	bases := []*addedBase{base}
	for _, old := range v.([]*addedBase) {
		if old != base && len(bases) < addedPerKey {
			bases = append(bases, old)
		}
	}
	a.runs.Add(key, bases)
}

// acceptedAdded reports whether b is accepted as the bundle of an
// accepted run with backend sections added, checked alone (see above).
func (c *Checker) acceptedAdded(ctx context.Context, b *bundle.Bundle, p addedProbe, res *Result) bool {
	if c.added == nil || p.key == "" || p.parts.names[stubListener] > 0 || p.parts.names[stubMaps] > 0 {
		return false
	}
	v, ok := c.added.runs.Get(p.key)
	if !ok {
		return false
	}
	for _, base := range v.([]*addedBase) {
		if added, ok := addedTo(base, p.parts); ok {
			c.added.touch(p.key, base)
			changed := changedAlone(base, p)
			loads, ok := stubMapLoads(b.BaseDir, changed)
			if !ok {
				return false
			}
			start := time.Now()
			cfg, kept := stubSections(p.parts, added, loads)
			stub := stubFiles(b, cfg, kept, changed)
			shape := shapeKey(p.parts, added, cfg, kept, stub)
			known := c.added.shapes.known(shape)
			if ok = known; !ok {
				if ok = c.stubSectionsAccepted(ctx, stub); ok {
					c.added.shapes.add(shape)
				}
			}
			res.Durations[phase.Semantic] += time.Since(start)
			if ok {
				res.SectionsCheckedAlone = len(added)
				res.MapsCheckedAlone = len(changed)
				res.SectionsShapeKnown = known
			}
			return ok
		}
	}
	return false
}

// changedAlone are p's alone maps (name -> converter) whose content
// differs from base's (or that base has no digest of).
func changedAlone(base *addedBase, p addedProbe) map[string]string {
	changed := make(map[string]string)
	for name, conv := range p.alone {
		if sum, ok := base.alone[name]; !ok || sum != p.aloneSums[name] {
			changed[name] = conv
		}
	}
	return changed
}

// addedTo returns the sections of parts added to base (by index): the
// addable backend sections base has no section of the name of, each
// named as no other section of parts is and naming a defaults section
// another frontend, backend or listen section names too, at most maxAdded
// of them and maxAddedBytes in all, the others base's sections
// (sectionsSum); ok is false otherwise. (HAProxy warns when one proxy
// names a defaults section and another uses it without naming it, as the
// last before it: the base, accepted without a warning, has no proxy
// using it unnamed then, and the new ones name it.)
func addedTo(base *addedBase, parts *cfgParts) (added map[int]bool, ok bool) {
	added = make(map[int]bool)
	size := 0
	refs := make(map[string]int) // the new sections naming each defaults section
	for i, s := range parts.secs {
		if !parts.addable[i] || base.has(s.name) {
			continue
		}
		if parts.names[s.name] != 1 {
			return nil, false
		}
		added[i] = true
		size += len(s.text)
		refs[parts.from[i]]++
	}
	for name, n := range refs {
		if parts.explicit[name] <= n {
			return nil, false
		}
	}
	if len(added) == 0 || len(added) > maxAdded || size > maxAddedBytes || sectionsSum(parts, added) != base.sum {
		return nil, false
	}
	return added, true
}

// stubSectionsAccepted reports whether haproxy -c accepts, without a
// warning, the stub bundle (stubFiles) written into a workspace of its
// own. False on any other outcome.
func (c *Checker) stubSectionsAccepted(ctx context.Context, stub *bundle.Bundle) bool {
	ws, err := NewWorkspace(c.tempDir)
	if err != nil {
		return false
	}
	defer func() { _ = ws.Remove() }()
	if err := bundle.Write(ws.Dir(), stub.Relocated(ws.Dir())); err != nil {
		return false
	}
	warnings, _, err := c.runHAProxy(ctx, ws.Dir())
	return err == nil && len(warnings) == 0
}

// stubSections is the stub configuration: stubGlobal (unless the rest
// may name "httpclient"), a listener of its own (first of the proxies, so
// that it inherits no defaults section), the frontend loads
// (stubMapLoads, "" for none) of the changed alone maps, then parts'
// sections in order but the frontend, listen and backend sections not in
// added; kept is that last part (cfg but for the stub's own lines, which
// name no file but the loaded maps).
func stubSections(parts *cfgParts, added map[int]bool, loads string) (cfg, kept string) {
	var sb strings.Builder
	for i, s := range parts.secs {
		switch s.kind {
		case "frontend", "listen", "backend":
			if !added[i] {
				continue
			}
		}
		sb.WriteString(s.text)
		if !strings.HasSuffix(s.text, "\n") {
			sb.WriteByte('\n')
		}
	}
	kept = sb.String()
	global := stubGlobal
	if mayName(kept, "httpclient") {
		global = ""
	}
	return "# sections checked alone (htc checker, added.go)\n" + global + "frontend " + stubListener +
		"\n    timeout client 1s\n    bind 127.0.0.1:1\n" + loads + kept, kept
}

// sectionsSum digests parts' sections but those in skip, each without
// the newlines at its end (blank lines, which HAProxy skips).
func sectionsSum(parts *cfgParts, skip map[int]bool) [32]byte {
	k := contenthash.New()
	for i, s := range parts.secs {
		if !skip[i] {
			k.String(strings.TrimRight(s.text, "\n"))
		}
	}
	return k.Sum256()
}

// addedKey is semanticKey with haproxy.cfg's addable backend sections
// left out (the others digested by sectionsSum in their place), and the
// content of the alone maps too (their names and converters in its
// place: acceptedAdded loads those whose content differs).
func addedKey(b *bundle.Bundle, loose map[string]bool, alone map[string]string, parts *cfgParts) string {
	skip := make(map[int]bool)
	for i, a := range parts.addable {
		if a {
			skip[i] = true
		}
	}
	sum := sectionsSum(parts, skip)
	cfg := "added sections\x00" + string(sum[:])
	both := loose
	if len(alone) > 0 {
		both = maps.Clone(loose)
		for _, name := range slices.Sorted(maps.Keys(alone)) {
			both[name] = true
			cfg += "\x00" + name + "\x00" + alone[name]
		}
	}
	return semanticKey(&bundle.Bundle{BaseDir: b.BaseDir, Config: cfg,
		Maps: b.Maps, Files: b.Files, Certs: b.Certs}, both)
}

// cutConfig cuts cfg into sections at the lines config-parser starts a
// section at (policy.SectionHeader, as splitConfig) and marks the
// addable backend sections; ok is false when a line starts with '.' (a
// conditional block or another directive HAProxy reads before sections)
// or with a quote, a backslash or a '$' (a first word that could read as
// one), when a line starts with a section keyword of HAProxy 3.0 that
// config-parser does not cut at, or when two sections have one kind and
// name.
func cutConfig(cfg string) (*cfgParts, bool) {
	p := &cfgParts{names: make(map[string]int, len(cfg)/128), explicit: make(map[string]int)}
	seen := make(map[[2]string]bool, len(cfg)/128)
	cur := &cfgSection{kind: "#"}
	var words []string // cur's header
	addable, start, offset := false, 0, 0
	end := func() {
		cur.text = cfg[start:offset]
		p.secs = append(p.secs, cur)
		p.addable = append(p.addable, addable)
		from := ""
		switch cur.kind {
		case "frontend", "backend", "listen":
			if len(words) > 2 && words[2] == "from" {
				from = words[len(words)-1]
				p.explicit[from]++
			}
		}
		p.from = append(p.from, from)
	}
	for _, line := range policy.Lines(cfg) {
		w := firstWord(line)
		if w != "" && strings.ContainsRune(".\"'\\$", rune(w[0])) || unsplitSection[w] {
			return nil, false
		}
		if header, isHeader := sectionHeader(line, w); isHeader {
			end()
			unnamed := 0
			cur, words, start = &cfgSection{kind: header[0], name: sectionName(header, &unnamed)}, header, offset
			if header[0] == "defaults" && len(header) == 1 {
				cur.name = "" // config-parser counts them; HAProxy does not name them
			}
			k := [2]string{cur.kind, cur.name}
			if cur.name != "" && seen[k] {
				return nil, false
			}
			seen[k] = true
			p.names[cur.name]++
			addable = cur.kind == "backend" && len(header) == 4 && header[2] == "from"
		} else if addable && w != "" && w[0] != '#' {
			addable = addableLine(lineWords(line))
		}
		offset += len(line) + 1
	}
	offset = min(offset, len(cfg))
	end()
	return p, true
}

// sectionHeader is policy.SectionHeader(line) (w: line's firstWord),
// without the tokenizer for a first word of letters, digits, '-', '_'
// and '.' (which the tokenizer leaves as it is).
func sectionHeader(line, w string) ([]string, bool) {
	for i := 0; i < len(w); i++ {
		if c := w[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return policy.SectionHeader(line)
		}
	}
	if w == "" || !inventory.StartsSection(w) {
		return nil, false
	}
	return lineWords(line), true
}

// lineWords are the words of one line as HAProxy reads them: the fields
// between spaces and tabs when the line has only printable ASCII and
// nothing the tokenizer reads specially (quotes, escapes, variables,
// comments), else policy.Words.
func lineWords(line string) []string {
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"' || c == '\'' || c == '\\' || c == '$' || c == '#' || (c < 0x21 && c != ' ' && c != '\t') || c > 0x7e:
			return policy.Words(line)
		}
	}
	return strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
}

// unsplitSection are HAProxy 3.0's section keywords that config-parser
// (and so splitConfig) does not start a section at.
var unsplitSection = map[string]bool{"crt-store": true, "traces": true, "acme": true}

// firstWord is the first blank-separated word of line as written ("" for
// a blank line): enough to see a '.' directive or a section keyword,
// which are plain words.
func firstWord(line string) string {
	line = strings.TrimLeft(line, " \t")
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		return line[:i]
	}
	return line
}

// addableLine reports whether the words of one line of a backend section
// act inside that section only and name no file: the keywords the
// ingress-nginx library's backends use.
func addableLine(w []string) bool {
	switch w[0] {
	case "mode":
		return len(w) == 2 && (w[1] == "http" || w[1] == "tcp")
	case "timeout":
		return len(w) == 3 && (w[1] == "connect" || w[1] == "server" || w[1] == "queue" || w[1] == "tunnel")
	case "balance", "hash-type", "cookie", "retries", "retry-on":
		return true
	case "http-request":
		return len(w) > 2 && strings.HasPrefix(w[1], "set-var(txn.")
	case "server":
		if len(w) < 3 {
			return false
		}
		for i := 3; i < len(w); i++ {
			n, ok := addableServerOption[w[i]]
			if !ok {
				return false
			}
			i += n
		}
		return true
	}
	return false
}

// addableServerOption are the server options a section checked alone may
// use, with how many arguments each takes: none names a file (ca-file and
// crt are left to the whole check: certificates are shared by path across
// sections), an id or a guid (unique across the configuration), or another
// proxy (track).
var addableServerOption = map[string]int{
	"check": 0, "ssl": 0, "backup": 0, "no-check": 0,
	"verify": 1, "verifyhost": 1, "sni": 1, "alpn": 1, "proto": 1, "cookie": 1,
	"weight": 1, "maxconn": 1, "inter": 1, "rise": 1, "fall": 1,
}
