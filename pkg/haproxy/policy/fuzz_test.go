package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// hide spells a keyword the way recipe says, character by character, in
// one of the forms HAProxy reads as that character.
func hide(kw string, recipe []byte) string {
	var b strings.Builder
	pick := func(i int) byte {
		if len(recipe) == 0 {
			return 0
		}
		return recipe[i%len(recipe)]
	}
	lead := []string{"", " ", "\t", "\r", "\v\f ", "  \r "}
	b.WriteString(lead[int(pick(0))%len(lead)])
	switch pick(1) % 5 {
	case 1:
		b.WriteString("no ")
	case 2:
		b.WriteString("default ")
	case 3:
		b.WriteString(`"$HTC_UNSET" `)
	}
	for i := 0; i < len(kw); i++ {
		c := kw[i]
		switch pick(i+2) % 6 {
		case 0:
			b.WriteByte(c)
		case 1:
			fmt.Fprintf(&b, `"%c"`, c)
		case 2:
			fmt.Fprintf(&b, `'%c'`, c)
		case 3:
			fmt.Fprintf(&b, `\x%02x`, c)
		case 4:
			fmt.Fprintf(&b, `\x%02X`, c)
		default:
			fmt.Fprintf(&b, `""%c''`, c)
		}
	}
	return b.String()
}

// FuzzPolicy: Check never panics on any configuration, and a
// dangerous directive spelled with any quoting and escaping, after any
// line, is always refused under its own name.
func FuzzPolicy(f *testing.F) {
	f.Add("frontend f", []byte{0, 1, 2, 3})
	f.Add("global\n    log-tag \"", []byte{5, 3, 1})
	f.Add("backend b\n    server s1 /x", []byte{4, 4, 4, 4, 4})
	f.Add(".if defined(X)", []byte{})
	f.Add("[scope]", []byte{9})
	for _, e := range inventory {
		f.Add(e.example, []byte{byte(len(e.name))})
	}
	dangerous := []string{"lua-load", "setenv", "ssl-provider", "insecure-fork-wanted", "external-check"}
	f.Fuzz(func(t *testing.T, before string, recipe []byte) {
		b := &bundle.Bundle{BaseDir: testBase, Config: before, Maps: map[string]string{"m": before}}
		_ = Check(b, nil)
		kw := dangerous[int(len(recipe))%len(dangerous)]
		line := hide(kw, recipe) + " " + testBase + "/files/x"
		cfg := "global\n" + before + "\n" + line + "\n"
		err := Check(&bundle.Bundle{BaseDir: testBase, Config: cfg}, nil)
		pe, ok := err.(*Error)
		if !ok {
			t.Fatalf("%q after %q: not refused (%v)", line, before, err)
		}
		for _, fd := range pe.Findings {
			if fd.Key == kw {
				return
			}
		}
		t.Fatalf("%q after %q: %s not named: %v", line, before, kw, pe.Findings)
	})
}

// haproxyMapRead is an independent model of pat_ref_read_from_file_smp()
// (src/pattern.c): fgets() into a 16384-byte buffer, '#' in the first
// column, leading spaces and tabs stripped, the key up to a space, tab,
// CR, LF or NUL, separators skipped, the value up to CR, LF or NUL with
// trailing spaces and tabs removed.
func haproxyMapRead(content string) [][2]string {
	var out [][2]string
	for len(content) > 0 {
		n := strings.IndexByte(content, '\n') + 1
		if n == 0 || n > mapLineMax {
			n = min(len(content), mapLineMax)
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
		if mapLineProblem(line, mapUse{asMap: true}) != "" {
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
