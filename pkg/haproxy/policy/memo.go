package policy

import (
	"maps"
	"strconv"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// Scans is Evaluate that remembers the scans it made, so that a bundle
// whose haproxy.cfg and other files are those of one it scanned before
// costs only the check of its maps' lines: an admission that adds a route
// changes a map, not the 10,000 backends of haproxy.cfg. The shortcut, and
// why its answer is Evaluate's:
//
// Evaluate's scan reads the maps' content in one place, the check of their
// lines (checkMapFiles), which runs last and writes only the findings and
// how each map is read (mapUse); everything before it (names, haproxy.cfg,
// the crt-lists and SPOE files HAProxy parses, the deferred references)
// reads BaseDir, the grant, the version, haproxy.cfg and the bundle's
// files, of which the maps by name and kind only (isBundleFile, dirs). So
// that part is kept under the exact text of haproxy.cfg and a hash of the
// rest (scanKey), when it found nothing and read no map's content (a map
// HAProxy parses as a crt-list or SPOE file); a later bundle with the same
// key runs the map check alone on a copy of it, with its own files.
// FuzzScansAreEvaluate compares its answers with Evaluate's. Safe for
// concurrent use: a kept scan is never modified.
type Scans struct {
	kept  *lru.Cache // scanKey -> *policyScan (before the map check, frozen)
	clean *cleanMaps // the map contents the map check found nothing in
}

// DefaultScans is how many scans a Scans keeps when NewScans is given 0.
// Each keeps the text of the haproxy.cfg it scanned (its strings are cut
// from it): about 2 MiB at 10,000 backends.
const DefaultScans = 4

// NewScans returns a Scans keeping the last n scans (DefaultScans when n
// is 0 or less).
func NewScans(n int) *Scans {
	if n <= 0 {
		n = DefaultScans
	}
	return &Scans{kept: lru.New(n), clean: newCleanMaps()}
}

// scanKey identifies what the scan before the map check reads: the text
// of haproxy.cfg, and a hash of BaseDir, the version, the grant and every
// other file (kind, name, path; its content unless it is a map).
type scanKey struct {
	config string
	rest   [32]byte
}

func keyOf(b *bundle.Bundle, allowed []string, version string) scanKey {
	k := contenthash.New().String(b.BaseDir).String(version)
	k.String(strconv.Itoa(len(allowed))).Strings(allowed...)
	files := b.AllFiles()[1:]
	k.String(strconv.Itoa(len(files)))
	for _, f := range files {
		k.String(string(f.Kind)).String(f.Name).String(f.RelPath)
		if f.Kind == bundle.KindMap {
			k.String("")
		} else {
			k.String("=").String(f.Content)
		}
	}
	return scanKey{config: b.Config, rest: k.Sum256()}
}

// Evaluate is Evaluate(b, allowed, version), the scan before the map check
// taken from the one kept under b's scanKey when there is one.
func (m *Scans) Evaluate(b *bundle.Bundle, allowed []string, version string) (Report, error) {
	key := keyOf(b, allowed, version)
	var s *policyScan
	if v, ok := m.kept.Get(key); ok {
		s = v.(*policyScan).reuse(b)
	} else {
		s = scanButMaps(b, allowed, version)
		if kept := s.frozen(); kept != nil {
			m.kept.Add(key, kept)
		}
	}
	s.clean = m.clean
	err := s.finish()
	return s.report(), err
}

// frozen is a copy of s, a scan before the map check, to keep: nil when it
// found something or read a map's content. It holds no file content and
// no tokenizer buffer; reuse copies what the map check writes.
func (s *policyScan) frozen() *policyScan {
	if len(s.findings) > 0 || s.dropped > 0 {
		return nil
	}
	for _, p := range s.pending {
		if s.kinds[p.abs] == bundle.KindMap {
			return nil
		}
	}
	f := *s
	f.files, f.seen, f.findings = nil, nil, nil
	f.tok, f.tokAll = cfgtext.Tokenizer{}, cfgtext.Tokenizer{}
	f.mapUse = maps.Clone(s.mapUse)
	return &f
}

// reuse is a kept scan ready for the map check of b, whose key is the
// kept scan's: b's files, and its own copy of what the map check writes
// (the findings, mapUse: its values are only read).
func (s *policyScan) reuse(b *bundle.Bundle) *policyScan {
	r := *s
	r.files = make(map[string]string, len(s.kinds))
	for _, f := range b.AllFiles() {
		r.files[r.abs(f.RelPath)] = f.Content
	}
	r.seen, r.findings, r.dropped = make(map[Finding]bool), nil, 0
	r.mapUse = maps.Clone(s.mapUse)
	return &r
}

// Retain forgets what m keeps of bundles other than live: the scans of
// another haproxy.cfg (each holds its text) and the clean map contents
// that are not live's files (by identity). allowed and version are the
// ones live's scan is kept under (a Checker's); scans of live under
// others are forgotten too. What is forgotten is scanned again when asked
// for: Retain changes how fast Evaluate is, never its answer. A nil live
// forgets everything.
func (m *Scans) Retain(live *bundle.Bundle, allowed []string, version string) {
	var kept any
	var key scanKey
	var contents []string
	if live != nil {
		key = keyOf(live, allowed, version)
		kept, _ = m.kept.Get(key)
		for _, f := range live.AllFiles() {
			contents = append(contents, f.Content)
		}
	}
	m.kept.Clear()
	if kept != nil {
		m.kept.Add(key, kept)
	}
	m.clean.retain(contents)
}

// Len is how many scans m keeps.
func (m *Scans) Len() int { return m.kept.Len() }
