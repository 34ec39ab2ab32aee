package haproxy

import (
	"strconv"
	"strings"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// The memory of stub shapes (issue 34): acceptedAdded skips the stub's haproxy
// -c when one accepted without a warning a stub whose input (shapeKey: the whole
// stub bundle) differed only in the added sections' backend names, server names
// (numbered by first occurrence: duplicates stay duplicates) and servers' IPv4
// addresses (strict dotted quads but 0.0.0.0, ports kept). The verdict cannot
// depend on them: HAProxy checks a name's characters (a shape takes only those
// invalid_char allows) and uniqueness (addedTo checks the real names each time),
// and finds a name only where a word names it (namedIn: the stub's text names
// none; no server-state file, no Lua); a literal IPv4 address is never resolved,
// and at check time only 0.0.0.0 (is_addr: none) is more than bytes to it.
const (
	// stubShapeKeys bounds stubShapes: each entry is a 64-byte hex key and
	// the LRU's list element and map entry, under 200 bytes: under 13 KB.
	stubShapeKeys = 64
	// Placeholders: bytes sectionShape refuses in a section.
	shapeBackend = "\x01"
	shapeServer  = "\x02"
	shapeIPv4    = "\x03"
)

// stubShapes are the shapeKeys of stubs haproxy -c accepted without a
// warning. Safe for concurrent use (lru.Cache is).
type stubShapes struct{ keys *lru.Cache }

func newStubShapes() *stubShapes { return &stubShapes{keys: lru.New(stubShapeKeys)} }

// known reports whether key ("" for none) was accepted.
func (s *stubShapes) known(key string) bool {
	if s == nil || key == "" {
		return false
	}
	_, ok := s.keys.Get(key)
	return ok
}

// add records key ("" for none) as accepted.
func (s *stubShapes) add(key string) {
	if s != nil && key != "" {
		s.keys.Add(key, struct{}{})
	}
}

// shapeKey is the key of the stub (cfg, kept: stubSections of parts'
// added sections; stub: stubFiles) with each added section's shape in
// place of its text and each section's blank lines at its end dropped;
// "" when a section has no shape or the shaped text
// names a placeholdered name, reads a server-state file or may run Lua.
func shapeKey(parts *cfgParts, added map[int]bool, cfg, kept string, stub *bundle.Bundle) string {
	var sb strings.Builder
	sb.WriteString(strings.TrimSuffix(cfg, kept))
	var names []string
	for i, s := range parts.secs {
		switch s.kind {
		case "frontend", "listen", "backend":
			if !added[i] {
				continue
			}
		}
		text := s.text
		if added[i] {
			shape, ns, ok := sectionShape(text)
			if !ok {
				return ""
			}
			text, names = shape, append(names, ns...)
		}
		// Blank lines at a section's end (HAProxy skips them) do not
		// make another shape: the last section of a text has none.
		sb.WriteString(strings.TrimRight(text, "\n"))
		sb.WriteByte('\n')
	}
	shaped := sb.String()
	if strings.Contains(shaped, "server-state") || strings.Contains(shaped, "lua") {
		return ""
	}
	for _, name := range names {
		if namedIn(shaped, name) {
			return ""
		}
	}
	return semanticKey(&bundle.Bundle{BaseDir: stub.BaseDir, Config: "stub shape\x00" + shaped,
		Maps: stub.Maps, Files: stub.Files, Certs: stub.Certs}, map[string]bool{})
}

// namedIn reports whether HAProxy could read name in text (mayName's
// way): text has a '$' or a '\', or, once quotes are dropped, has name
// not between two letters, digits or '_' (no HAProxy syntax cuts a name
// out of a run of those).
func namedIn(text, name string) bool {
	if strings.ContainsAny(text, "$\\") {
		return true
	}
	text = strings.NewReplacer(`"`, "", `'`, "").Replace(text)
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !wordByte(text[j-1])) && (end == len(text) || !wordByte(text[end])) {
			return true
		}
		i = j + 1
	}
}

// wordByte reports whether c is a letter, a digit or '_'.
func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// sectionShape is an addable backend section's text (header "backend NAME
// from DEFAULTS") with NAME, its server names and its servers' IPv4
// addresses replaced by placeholders, and the names replaced; ok is false
// when the section has a byte below '\t' or a header or server line
// that is not plain (plainLine), or a name invalid_char refuses.
func sectionShape(text string) (shape string, names []string, ok bool) {
	for i := 0; i < len(text); i++ {
		if text[i] < '\t' {
			return "", nil, false
		}
	}
	servers := make(map[string]int)
	var sb strings.Builder
	sb.Grow(len(text))
	for n, line := range strings.SplitAfter(text, "\n") {
		body := strings.TrimSuffix(line, "\n")
		plain := plainLine(body)
		var words []string
		if plain {
			words = strings.FieldsFunc(body, func(r rune) bool { return r == ' ' || r == '\t' })
		} else if w := lineWords(body); len(w) > 0 {
			words = w
		}
		switch {
		case n == 0:
			if !plain || len(words) != 4 || words[0] != "backend" || !validName(words[1]) {
				return "", nil, false
			}
			names = append(names, words[1])
			sb.WriteString(replaceWords(body, map[int]string{1: shapeBackend}))
		case len(words) > 0 && words[0] == "server":
			if !plain || len(words) < 3 || !validName(words[1]) {
				return "", nil, false
			}
			id, seen := servers[words[1]]
			if !seen {
				id = len(servers) + 1
				servers[words[1]] = id
				names = append(names, words[1])
			}
			repl := map[int]string{1: shapeServer + strconv.Itoa(id) + shapeServer}
			if addr, port, hasPort := strings.Cut(words[2], ":"); strictIPv4(addr) && addr != "0.0.0.0" && digits(port) {
				repl[2] = shapeIPv4
				if hasPort {
					repl[2] += ":" + port
				}
			}
			sb.WriteString(replaceWords(body, repl))
		default:
			sb.WriteString(body)
		}
		sb.WriteString(line[len(body):])
	}
	return sb.String(), names, true
}

// plainLine reports whether HAProxy reads line's words as the fields
// between its spaces and tabs: only printable ASCII, spaces and tabs, and
// none of the characters its tokenizer reads specially (lineWords).
func plainLine(line string) bool {
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"' || c == '\'' || c == '\\' || c == '$' || c == '#' || (c < 0x21 && c != ' ' && c != '\t') || c > 0x7e:
			return false
		}
	}
	return true
}

// replaceWords is the plain line with its words (fields between spaces
// and tabs, counted from 0) at repl's indexes replaced, blanks kept.
func replaceWords(line string, repl map[int]string) string {
	var sb strings.Builder
	word, i := 0, 0
	for i < len(line) {
		if line[i] == ' ' || line[i] == '\t' {
			sb.WriteByte(line[i])
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if r, ok := repl[word]; ok {
			sb.WriteString(r)
		} else {
			sb.WriteString(line[i:j])
		}
		word++
		i = j
	}
	return sb.String()
}

// digits reports whether s has only decimal digits ("" has).
func digits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// validName reports whether HAProxy's invalid_char accepts name as a
// proxy's or a server's: letters, digits, '.', ':', '_' and '-'.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == ':' || c == '_' || c == '-') {
			return false
		}
	}
	return name != ""
}

// strictIPv4 reports whether s is four decimal octets 0-255 joined by
// '.', without a sign or a leading zero (what inet_pton reads as an
// IPv4 address).
func strictIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || (len(p) > 1 && p[0] == '0') {
			return false
		}
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
			n = n*10 + int(p[i]-'0')
		}
		if n > 255 {
			return false
		}
	}
	return true
}
