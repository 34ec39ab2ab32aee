package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
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
	for _, e := range inventory.Table {
		f.Add(e.Example, []byte{byte(len(e.Name))})
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
