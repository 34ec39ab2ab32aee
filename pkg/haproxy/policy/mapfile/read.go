package mapfile

import (
	"fmt"
	"slices"
	"strings"
)

// LineMax is how much of a line HAProxy 3.0 reads from a map or pattern
// file at once: pat_ref_read_from_file[_smp]() (src/pattern.c) read with
// fgets() into the trash buffer, allocated early with the default BUFSIZE
// of 16384 bytes whatever tune.bufsize says (verified with 3.0.11), so
// 16383 bytes per read, the '\n' included; each read is parsed as a line
// of its own (see readerEntries).
const LineMax = 16383

// Use is how HAProxy reads one file (both when the configuration uses it
// both ways).
type Use struct {
	// AsMap: two columns, "key value" (map converters, set-map, -M).
	AsMap bool
	// AsPattern: one pattern per line (ACL -f, add-acl, del-acl).
	AsPattern bool
}

// LineProblem says how HAProxy would misread one line, "" when it reads
// it as written: a comment ('#' in the first column), an empty line, or
// "key value" (maps) / "pattern" (pattern files) without surrounding
// whitespace and control characters. A final '\r' (CRLF) is accepted.
func LineProblem(line string, u Use) string {
	if splitByReader(line, u) {
		return fmt.Sprintf("the line is %d bytes; HAProxy reads %d bytes at a time and makes the rest another entry", len(line), LineMax)
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
		return "the entry ends with whitespace, which HAProxy " + map[bool]string{true: "strips (an empty value?)", false: "keeps in the pattern"}[u.AsMap]
	}
	return ""
}

// splitByReader reports whether HAProxy's reader, which reads a line in
// pieces of LineMax bytes and parses each as a line, reads other
// entries from line than it would from the whole line.
func splitByReader(line string, u Use) bool {
	if len(line)+1 <= LineMax {
		return false // line and '\n' in one read
	}
	split := func(asMap bool) bool {
		return !slices.Equal(readerEntries(line, asMap, len(line)+2), readerEntries(line, asMap, LineMax+1))
	}
	return (u.AsMap && split(true)) || (u.AsPattern && split(false))
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

// Entries returns the entries HAProxy 3.0 reads from the content of a
// map file (pat_ref_read_from_file_smp, reading at most LineMax bytes of
// a line at a time, see readerEntries), in file order: keys[i] maps to
// values[i]. Comments and blank lines make no entry.
func Entries(content string) (keys, values []string) {
	for len(content) > 0 {
		line := content
		if i := indexNL(content); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = ""
		}
		e := readerEntries(line, true, LineMax+1)
		for i := 0; i+1 < len(e); i += 2 {
			keys = append(keys, e[i])
			values = append(values, e[i+1])
		}
	}
	return keys, values
}
