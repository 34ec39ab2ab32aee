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
// HAProxy will read it; conv is the map converter that reads it ("" for
// any other use: ACL -f, set-map, ...).
func (s *policyScan) useMapFile(at loc, what string, w cfgtext.Word, asMap bool, conv string) {
	s.checkPathUse(at, what, w, inventory.Entry{Class: inventory.ClassRead}, refUse{asMap: asMap, asPattern: !asMap, conv: conv})
}

// countConverter counts a map converter's reference to the bundle file
// abs (see looseMaps and aloneMaps).
func (s *policyScan) countConverter(abs, conv string) {
	if looseConverter(conv) {
		s.looseRefs[abs]++
	}
	if aloneConverter(conv) {
		u, seen := s.alone[abs]
		s.alone[abs] = aloneUse{conv: conv, refs: u.refs + 1, mixed: u.mixed || (seen && u.conv != conv)}
	}
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

// aloneConverter reports whether converter name reads its map file so
// that nothing but the file decides whether HAProxy 3.0 accepts it:
// map_reg and map_regm (src/map.c) compile each key as a regular
// expression (PAT_MATCH_REG, PAT_MATCH_REGM: with captures), keep each
// value as a string, and take a plain string as their default value, so
// sample_load_map() loads the file alike from any line (the file, the
// match method and PAT_MF_NO_DNS). A stub configuration that loads only
// the file through the same converter is refused exactly when the whole
// configuration is (TestMapsCheckedAloneAgainstHAProxy30, package
// haproxy).
func aloneConverter(name string) bool {
	return name == "map_reg" || name == "map_regm"
}

// aloneUse counts the aloneConverter references to one file.
type aloneUse struct {
	conv  string // the converter of the first
	refs  int
	mixed bool // not all are conv
}

// aloneMaps returns the bundle maps (by name), with their converter, whose
// every reference in the configuration is one and the same converter of
// aloneConverter, and that no reference to a directory covers. Nil when a
// code directive may run (code can read any file).
func (s *policyScan) aloneMaps() map[string]string {
	if len(s.codeAt) > 0 {
		return nil
	}
	out := map[string]string{}
	for abs, k := range s.kinds {
		u := s.alone[abs]
		if k != bundle.KindMap || u.refs == 0 || u.mixed || u.refs != s.refs[abs] || s.coveredByDir(abs) {
			continue
		}
		out[filepath.ToSlash(relName(filepath.Join(s.baseDir, bundle.Dir(bundle.KindMap)), abs))] = u.conv
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
	if s.clean.clean(content, u) {
		return // checked before, nothing found (cleanMaps)
	}
	if similar := s.clean.similar(name, u); similar != "" && linesClean(changedLines(similar, content), u) {
		s.clean.add(name, content, u) // the other lines are similar's (cleanMaps)
		return
	}
	n, shown, more := 0, 0, 0
	for rest := content; len(rest) > 0; {
		n++
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
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
	if shown == 0 {
		s.clean.add(name, content, u)
	}
}

// linesClean reports whether HAProxy reads every line of text, read as u,
// as written.
func linesClean(text string, u mapfile.Use) bool {
	for rest := text; len(rest) > 0; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if mapfile.LineProblem(line, u) != "" {
			return false
		}
	}
	return true
}

// relName is abs relative to base, for finding locations.
func relName(base, abs string) string {
	if r, err := filepath.Rel(base, abs); err == nil {
		return r
	}
	return filepath.Base(abs)
}
