package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// mapLineMax is how much of a line HAProxy 3.0 reads from a map or pattern
// file at once: pat_ref_read_from_file[_smp]() (src/pattern.c) read with
// fgets() into the trash buffer, allocated early with the default BUFSIZE
// of 16384 bytes whatever tune.bufsize says (verified with 3.0.11), so
// 16383 bytes per read, the '\n' included; each read is parsed as a line
// of its own (see readerEntries).
const mapLineMax = 16383

// maxMapFindings caps the findings reported per map or pattern file.
const maxMapFindings = 5

// mapUse is how HAProxy reads one bundle file.
type mapUse struct {
	// asMap: two columns, "key value" (map converters, set-map, -M).
	asMap bool
	// asPattern: one pattern per line (ACL -f, add-acl, del-acl).
	asPattern bool
}

// useMapFile checks a map or pattern file reference and records how
// HAProxy will read it; loose marks a plain-string map converter (see
// looseConverter).
func (s *policyScan) useMapFile(at loc, what string, w cfgtext.Word, asMap, loose bool) {
	s.checkPathUse(at, what, w, entry{class: clsRead}, refUse{asMap: asMap, asPattern: !asMap, loose: loose})
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
			s.mapUse[abs] = &mapUse{asMap: true}
		}
	}
	for _, abs := range sortedKeys(s.mapUse) {
		name := filepath.ToSlash(relName(s.baseDir, abs))
		s.checkMapContent(name, s.files[abs], *s.mapUse[abs])
	}
}

// checkMapContent checks the lines of one map or pattern file in one pass.
func (s *policyScan) checkMapContent(name, content string, u mapUse) {
	n, shown, more := 0, 0, 0
	for len(content) > 0 {
		n++
		line := content
		if i := indexNL(content); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = ""
		}
		problem := mapLineProblem(line, u)
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

// mapLineProblem says how HAProxy would misread one line, "" when it reads
// it as written: a comment ('#' in the first column), an empty line, or
// "key value" (maps) / "pattern" (pattern files) without surrounding
// whitespace and control characters. A final '\r' (CRLF) is accepted.
func mapLineProblem(line string, u mapUse) string {
	if splitByReader(line, u) {
		return fmt.Sprintf("the line is %d bytes; HAProxy reads %d bytes at a time and makes the rest another entry", len(line), mapLineMax)
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ""
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == 0:
			return "NUL byte: HAProxy ignores the rest of the line"
		case c == '\r':
			return "carriage return inside the line: HAProxy ends the entry there"
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return fmt.Sprintf("control character \\x%02x in an entry", c)
		}
	}
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	switch {
	case blank(line[0]) && onlyBlanks(line):
		return ""
	case blank(line[0]):
		return "the entry starts with whitespace, which HAProxy strips (an empty key?)"
	case blank(line[len(line)-1]):
		return "the entry ends with whitespace, which HAProxy " + map[bool]string{true: "strips (an empty value?)", false: "keeps in the pattern"}[u.asMap]
	}
	return ""
}

// splitByReader reports whether HAProxy's reader, which reads a line in
// pieces of mapLineMax bytes and parses each as a line, reads other
// entries from line than it would from the whole line.
func splitByReader(line string, u mapUse) bool {
	if len(line)+1 <= mapLineMax {
		return false // line and '\n' in one read
	}
	split := func(asMap bool) bool {
		return !slices.Equal(readerEntries(line, asMap, len(line)+2), readerEntries(line, asMap, mapLineMax+1))
	}
	return (u.asMap && split(true)) || (u.asPattern && split(false))
}

// readerEntries is what pat_ref_read_from_file_smp() (asMap: "key value")
// or pat_ref_read_from_file() (a pattern) make of line and its '\n' when
// fgets() reads at most n-1 bytes at a time (the trash buffer holds n,
// the final NUL included): for each piece, nothing when
// it starts with '#', or, leading spaces and tabs stripped, is empty or
// starts with CR, LF or NUL; else the key up to a space, tab, CR, LF or NUL
// and the value after the blanks up to CR, LF or NUL, trailing spaces and
// tabs removed (a map), or the text up to CR, LF or NUL (a pattern).
func readerEntries(line string, asMap bool, n int) []string {
	var out []string
	data := line + "\n"
	for len(data) > 0 {
		piece := data[:min(len(data), n-1)]
		data = data[len(piece):]
		if i := strings.IndexByte(piece, '\n'); i >= 0 {
			data, piece = piece[i+1:]+data, piece[:i+1]
		}
		if piece[0] == '#' {
			continue
		}
		c := strings.TrimLeft(piece, " \t")
		end := strings.IndexAny(c, "\x00\r\n")
		if end < 0 {
			end = len(c)
		}
		if end == 0 {
			continue
		}
		if !asMap {
			out = append(out, c[:end])
			continue
		}
		k := strings.IndexAny(c[:end], " \t")
		if k < 0 {
			out = append(out, c[:end], "")
			continue
		}
		out = append(out, c[:k], strings.TrimRight(strings.TrimLeft(c[k:end], " \t"), " \t"))
	}
	return out
}

// onlyBlanks reports whether s holds only spaces and tabs.
func onlyBlanks(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// indexNL is the index of the first '\n' in s, -1 when none.
func indexNL(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

// relName is abs relative to base, for finding locations.
func relName(base, abs string) string {
	if r, err := filepath.Rel(base, abs); err == nil {
		return r
	}
	return filepath.Base(abs)
}
