package haproxy

import (
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// sectionSpan is one section of haproxy.cfg as HAProxy sees it.
type sectionSpan struct {
	kind  string // section keyword: "global", "backend", ...; "" before the first section
	name  string // config-parser's name for it
	start int    // line number of the header (0 for the leading pseudo-section)
	lines []int  // line numbers of the section's non-empty lines, header excluded

	// Built on first use, so that locating every finding of a section
	// costs one pass over it, not one per finding (a backend of 10,000
	// servers has 10,000 server models to locate).
	byPrefix map[string]int   // first line by its first word, and by its first two words joined by \x00
	byText   map[string][]int // lines by trimmed text, in order, for lineOf
}

// configIndex locates sections and lines of haproxy.cfg so findings from
// config-parser and client-native, which carry no line numbers, can be
// reported at a line.
type configIndex struct {
	text     []string // physical lines, index 0 = line 1
	sections []*sectionSpan
	byKey    map[string]*sectionSpan
}

// indexConfig builds the index. Unnamed defaults sections get the names
// config-parser gives them ("unnamed_defaults_1", ...), "global" and the
// leading comments get "data".
func indexConfig(cfg string) *configIndex {
	idx := &configIndex{text: strings.Split(cfg, "\n"), byKey: make(map[string]*sectionSpan)}
	cur := &sectionSpan{kind: "#", name: "data"}
	idx.add(cur)
	unnamed := 0
	eachLine(cfg, func(n, _ int, line string, header []string) bool {
		switch {
		case header != nil:
			cur = &sectionSpan{kind: header[0], name: sectionName(header, &unnamed), start: n}
			idx.add(cur)
		case len(policy.Words(line)) > 0:
			cur.lines = append(cur.lines, n)
		}
		return true
	})
	return idx
}

// eachLine is the one section splitter of haproxy.cfg (indexConfig and
// splitConfig build on it): it calls fn with each line (policy.Lines), its
// byte offset in cfg and, when the line starts a section as config-parser
// models sections, its words (policy.SectionHeader; nil for other lines),
// until fn returns false.
func eachLine(cfg string, fn func(n, offset int, line string, header []string) bool) {
	offset := 0
	for n, line := range policy.Lines(cfg) {
		header, _ := policy.SectionHeader(line)
		if !fn(n, offset, line, header) {
			return
		}
		offset += len(line) + 1
	}
}

// sectionName is the name config-parser gives the section whose header
// words are words: "data" for global, "unnamed_defaults_N" for the Nth
// defaults section without a name (unnamed counts them), else the second word.
func sectionName(words []string, unnamed *int) string {
	name := ""
	if len(words) > 1 {
		name = words[1]
	}
	switch words[0] {
	case "global":
		name = "data"
	case "defaults":
		if name == "" {
			*unnamed++
			name = "unnamed_defaults_" + strconv.Itoa(*unnamed)
		}
	}
	return name
}

// add registers a section; a later section with the same key replaces the
// earlier one, as in config-parser.
func (idx *configIndex) add(s *sectionSpan) {
	idx.sections = append(idx.sections, s)
	idx.byKey[s.kind+"\x00"+s.name] = s
}

// section returns the span config-parser calls (kind, name), or nil.
func (idx *configIndex) section(kind, name string) *sectionSpan {
	return idx.byKey[kind+"\x00"+name]
}

// lineCursor records, per section and trimmed text, how many of its lines
// lineOf has handed out in one pass over the findings.
type lineCursor map[*sectionSpan]map[string]int

// lineOf returns the first line of the section whose trimmed text is text
// and that this pass (used) has not returned before; 0 when there is none.
func (idx *configIndex) lineOf(s *sectionSpan, text string, used lineCursor) int {
	if s == nil {
		return 0
	}
	if s.byText == nil {
		s.byText = make(map[string][]int)
		for _, n := range s.lines {
			t := strings.TrimSpace(idx.text[n-1])
			s.byText[t] = append(s.byText[t], n)
		}
	}
	if used[s] == nil {
		used[s] = make(map[string]int)
	}
	i := used[s][text]
	if lines := s.byText[text]; i < len(lines) {
		used[s][text] = i + 1
		return lines[i]
	}
	return 0
}

// lineStarting returns the first line of the section whose words begin with
// prefix, or the section's header line when none does.
func (idx *configIndex) lineStarting(s *sectionSpan, prefix ...string) int {
	if s == nil {
		return 0
	}
	if len(prefix) == 0 || len(prefix) > 2 {
		return idx.scanStarting(s, prefix)
	}
	if s.byPrefix == nil {
		s.byPrefix = make(map[string]int)
		for _, n := range s.lines {
			words := policy.Words(idx.text[n-1])
			if len(words) == 0 {
				continue
			}
			if _, ok := s.byPrefix[words[0]]; !ok {
				s.byPrefix[words[0]] = n
			}
			if len(words) > 1 {
				if k := words[0] + "\x00" + words[1]; s.byPrefix[k] == 0 {
					s.byPrefix[k] = n
				}
			}
		}
	}
	if n, ok := s.byPrefix[strings.Join(prefix, "\x00")]; ok {
		return n
	}
	return s.start
}

// scanStarting is lineStarting by a scan of the section's lines.
func (idx *configIndex) scanStarting(s *sectionSpan, prefix []string) int {
	for _, n := range s.lines {
		words := policy.Words(idx.text[n-1])
		if len(words) < len(prefix) {
			continue
		}
		match := true
		for i, p := range prefix {
			if words[i] != p {
				match = false
				break
			}
		}
		if match {
			return n
		}
	}
	return s.start
}
