package mapfile

import (
	"strings"
	"testing"
)

// haproxyMapRead is an independent model of pat_ref_read_from_file_smp()
// (src/pattern.c): fgets() into a 16384-byte buffer, '#' in the first
// column, leading spaces and tabs stripped, the key up to a space, tab,
// CR, LF or NUL, separators skipped, the value up to CR, LF or NUL with
// trailing spaces and tabs removed.
func haproxyMapRead(content string) [][2]string {
	var out [][2]string
	for len(content) > 0 {
		n := strings.IndexByte(content, '\n') + 1
		if n == 0 || n > LineMax {
			n = min(len(content), LineMax)
		}
		chunk := content[:n]
		content = content[n:]
		if chunk[0] == '#' {
			continue
		}
		c := strings.TrimLeft(chunk, " \t")
		if c == "" || c[0] == '\r' || c[0] == '\n' || c[0] == 0 {
			continue
		}
		k := strings.IndexAny(c, " \t\r\n\x00")
		if k < 0 {
			k = len(c)
		}
		key, rest := c[:k], strings.TrimLeft(c[k:], " \t")
		if v := strings.IndexAny(rest, "\r\n\x00"); v >= 0 {
			rest = rest[:v]
		}
		out = append(out, [2]string{key, strings.TrimRight(rest, " \t")})
	}
	return out
}

// FuzzMapEntry: a map line the check accepts is read by HAProxy's reader
// exactly as written: no entry for a comment or blank line, else one entry
// whose key is the text before the first space or tab and whose value is
// the rest.
func FuzzMapEntry(f *testing.F) {
	for _, s := range []string{"a.example be_a", " be", "a b ", "#x", "a\rb c", "a\x00b", "k\tv w", strings.Repeat("x", 16400)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.IndexByte(line, '\n') >= 0 {
			return
		}
		if LineProblem(line, Use{AsMap: true}) != "" {
			return
		}
		got := haproxyMapRead(line + "\n")
		body := strings.TrimSuffix(line, "\r")
		if body == "" || body[0] == '#' || strings.Trim(body, " \t") == "" {
			if len(got) != 0 {
				t.Fatalf("%q: read as %q", line, got)
			}
			return
		}
		key, value := body, ""
		if i := strings.IndexAny(body, " \t"); i >= 0 {
			key, value = body[:i], strings.TrimLeft(body[i:], " \t")
		}
		if len(got) != 1 || got[0] != [2]string{key, value} {
			t.Fatalf("%q: accepted but read as %q, not [%q %q]", line, got, key, value)
		}
	})
}
