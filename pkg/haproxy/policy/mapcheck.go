package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// maxMapFindings caps the findings reported per map or pattern file.
const maxMapFindings = 5

// useMapFile checks a map or pattern file reference and records how
// HAProxy will read it; loose marks a plain-string map converter (see
// looseConverter).
func (s *policyScan) useMapFile(at loc, what string, w cfgtext.Word, asMap, loose bool) {
	s.checkPathUse(at, what, w, inventory.Entry{Class: inventory.ClassRead}, refUse{asMap: asMap, asPattern: !asMap, loose: loose})
}

// looseConverter reports whether converter name reads its map file as
// plain strings: string keys (exact, prefix, suffix, substring, domain or
// directory match) and string values (HAProxy 3.0's map converters without
// an output suffix; map_reg and map_regm compile their keys). HAProxy accepts any content in such
// a map (TestLooseMapsAgainstHAProxy30): it neither parses a key as an
// address, a number or a regular expression nor a value as anything but a
// string.
func looseConverter(name string) bool {
	switch name {
	case "map", "map_str", "map_beg", "map_dir", "map_dom", "map_end", "map_sub":
		return true
	}
	return false
}

// looseMaps returns the bundle maps (by name) whose every reference in the
// configuration is a plain-string map converter (looseConverter), and that
// no reference to a directory covers: their content cannot change what
// haproxy -c says. Nil when a code directive may run (code can read any
// file).
func (s *policyScan) looseMaps() map[string]bool {
	if len(s.codeAt) > 0 {
		return nil
	}
	out := map[string]bool{}
	for abs, k := range s.kinds {
		if k != bundle.KindMap || s.looseRefs[abs] == 0 || s.looseRefs[abs] != s.refs[abs] || s.coveredByDir(abs) {
			continue
		}
		out[filepath.ToSlash(relName(filepath.Join(s.baseDir, bundle.Dir(bundle.KindMap)), abs))] = true
	}
	return out
}

// coveredByDir reports whether a reference names a directory above abs.
func (s *policyScan) coveredByDir(abs string) bool {
	for r := range s.refs {
		if r != abs && (r == "/" || strings.HasPrefix(abs, strings.TrimSuffix(r, "/")+"/")) {
			return true
		}
	}
	return false
}

// checkMapFiles checks every line of every map (all bundle maps, and every
// bundle file used as a map or pattern file), in bundle order.
func (s *policyScan) checkMapFiles() {
	for abs, k := range s.kinds {
		if k == bundle.KindMap && s.mapUse[abs] == nil {
			s.mapUse[abs] = &mapfile.Use{AsMap: true}
		}
	}
	for _, abs := range sortedKeys(s.mapUse) {
		name := filepath.ToSlash(relName(s.baseDir, abs))
		s.checkMapContent(name, s.files[abs], *s.mapUse[abs])
	}
}

// checkMapContent checks the lines of one map or pattern file in one pass.
func (s *policyScan) checkMapContent(name, content string, u mapfile.Use) {
	n, shown, more := 0, 0, 0
	for len(content) > 0 {
		n++
		var line string
		line, content, _ = strings.Cut(content, "\n")
		problem := mapfile.LineProblem(line, u)
		if problem == "" {
			continue
		}
		if shown == maxMapFindings {
			more++
			continue
		}
		shown++
		s.add(loc{file: name, line: n}, "", problem)
	}
	if more > 0 {
		s.add(loc{file: name}, "", fmt.Sprintf("%d more lines HAProxy would misread", more))
	}
}

// relName is abs relative to base, for finding locations.
func relName(base, abs string) string {
	if r, err := filepath.Rel(base, abs); err == nil {
		return r
	}
	return filepath.Base(abs)
}
