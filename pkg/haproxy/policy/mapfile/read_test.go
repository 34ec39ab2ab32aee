package mapfile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
)

func TestMapLineProblem(t *testing.T) {
	m, p := Use{AsMap: true}, Use{AsPattern: true}
	tests := []struct {
		line string
		u    Use
		want string // substring; "" = read as written
	}{
		{"example.com be_web", m, ""},
		{"example.com be web", m, ""},
		{"example.com\tbe_web", m, ""},
		{"example.com be_web\r", m, ""},
		{"# comment  ", m, ""},
		{"", m, ""},
		{"   \t", m, ""},
		{"key", m, ""},
		{strings.Repeat("k", LineMax-3) + " be", m, ""},
		{strings.Repeat("k", LineMax-2) + " be", m, "HAProxy reads 16383 bytes at a time"},
		// CR LF: HAProxy reads the CR in a piece of its own, which is empty.
		{strings.Repeat("k", LineMax-3) + " be\r", m, ""},
		{strings.Repeat("k", LineMax-4) + " be\r", m, ""},
		{strings.Repeat("k", LineMax-2) + " be\r", m, "HAProxy reads 16383 bytes at a time"},
		{strings.Repeat("p", LineMax) + "\r", p, ""},
		{strings.Repeat("p", LineMax+1) + "\r", p, "HAProxy reads 16383 bytes at a time"},
		// A comment, a blank line: the rest of a long one is another line.
		{"#" + strings.Repeat("c", LineMax-1), m, ""},
		{"#" + strings.Repeat("c", LineMax), m, "HAProxy reads 16383 bytes at a time"},
		{"#" + strings.Repeat("c", LineMax-1) + "\r", p, ""},
		{strings.Repeat(" ", 3*LineMax), m, ""},
		{strings.Repeat("\t", LineMax) + "\r", p, ""},
		// A '#' or blanks that begin the second piece are dropped by HAProxy.
		{strings.Repeat("k", LineMax-2) + " b#", m, "HAProxy reads 16383 bytes at a time"},
		{strings.Repeat("k", LineMax-2) + " b  ", m, "ends with whitespace"},
		{" be_other", m, "starts with whitespace"},
		{"\texample.com be", m, "starts with whitespace"},
		{" #x be", m, "starts with whitespace"},
		{"example.com be ", m, "strips (an empty value?)"},
		{"example.com ", m, "ends with whitespace"},
		{"a\x00b c", m, "NUL byte"},
		{"a b\rc d", m, "carriage return"},
		{"a\x0bb c", m, "control character \\x0b"},
		{"a b\x7f", m, "control character \\x7f"},
		{"10.0.0.0/8", p, ""},
		{"10.0.0.0/8 ", p, "keeps in the pattern"},
		{" 10.0.0.0/8", p, "starts with whitespace"},
	}
	for _, tt := range tests {
		got := LineProblem(tt.line, tt.u)
		if tt.want == "" {
			assert.Empty(t, got, "%q", tt.line)
		} else {
			assert.Contains(t, got, tt.want, "%q", tt.line)
		}
	}
}

// TestMapReaderAgainstHAProxy30 checks the line limit with the 3.0 binary:
// a pattern file whose first line is a comment of exactly LineMax bytes
// is read as one line; one byte more and the rest becomes an entry of its
// own (reported at line 2), whatever tune.bufsize says.
func TestMapReaderAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	dir := t.TempDir()
	run := func(first string, global string) string {
		lst := filepath.Join(dir, "p.lst")
		require.NoError(t, os.WriteFile(lst, []byte(first+"1.2.3.4x\n"), 0o600))
		cfg := filepath.Join(dir, "c.cfg")
		require.NoError(t, os.WriteFile(cfg, []byte("global\n"+global+"\nfrontend f\n    mode http\n    bind 127.0.0.1:1\n    acl a src -f "+lst+"\n    http-request deny if a\n"), 0o600))
		out, _ := exec.Command(bin, "-c", "-f", cfg).CombinedOutput()
		return string(out)
	}
	for _, global := range []string{"", "    tune.bufsize 1024"} {
		comment := "#" + strings.Repeat("A", LineMax-1)
		assert.NotContains(t, run(comment[:LineMax-8], global), "not a valid", "a line of %d bytes is one entry", LineMax)
		assert.Contains(t, run(comment, global), "'1.2.3.4x' is not a valid IPv4 or IPv6 address at line 2")
		// A leading space is stripped, a trailing one kept.
		assert.Contains(t, run(" 1.2.3.4 \n", global), "'1.2.3.4 ' is not a valid")
		// A NUL or a carriage return ends the entry: the rest is ignored.
		assert.NotContains(t, run("1.2.3.4\x00garbage\n", global), "at line 1 ")
		assert.NotContains(t, run("1.2.3.4\rgarbage\n", global), "at line 1 ")
		assert.Contains(t, run("1.2.3.4garbage\n", global), "at line 1 ")
	}
}

// TestMapReaderBoundariesAgainstHAProxy30 is a differential test of the
// line limit at its boundary: lines of 16380 to 16386 bytes with every
// ending that matters (CR, blanks, '#'), as pattern files (comments) and
// as maps (an address key and a long value), each loaded by its own ACL.
// HAProxy reports an invalid address exactly when it made another entry of
// a piece of the line (readerEntries), and splitByReader then says so; it
// also says so when a piece HAProxy ignores ('#', blanks) cut an entry
// short, which haproxy -c does not show. A line HAProxy reads whole, such
// as 16383 bytes followed by CR LF (issue 23), passes the check.
func TestMapReaderBoundariesAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	dir := t.TempDir()
	type probe struct {
		name, line, end string
		u               Use
	}
	var probes []probe
	for body := LineMax - 3; body <= LineMax+3; body++ {
		for _, end := range []string{"", "\r", " ", " \r", "#", "\t\r", "x\r"} {
			probes = append(probes,
				probe{"p" + strconv.Itoa(len(probes)), "#" + strings.Repeat("A", body-1) + end, end, Use{AsPattern: true}},
				probe{"m" + strconv.Itoa(len(probes)+1), "10.0.0.1 " + strings.Repeat("v", body-9) + end, end, Use{AsMap: true}})
		}
	}
	var cfg strings.Builder
	cfg.WriteString("global\ndefaults\n    mode http\nfrontend f\n    bind 127.0.0.1:1\n")
	for _, p := range probes {
		file := filepath.Join(dir, p.name)
		require.NoError(t, os.WriteFile(file, []byte(p.line+"\n"), 0o600))
		opt := "-f"
		if p.u.AsMap {
			opt = "-M -f"
		}
		fmt.Fprintf(&cfg, "    acl %s src %s %s\n", p.name, opt, file)
	}
	cfgFile := filepath.Join(dir, "c.cfg")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg.String()), 0o600))
	out, _ := exec.Command(bin, "-c", "-f", cfgFile).CombinedOutput()
	extra := 0
	for _, p := range probes {
		reported := strings.Contains(string(out), "ACL '"+p.name+"' : ")
		more := len(readerEntries(p.line, p.u.AsMap, LineMax+1)) > len(readerEntries(p.line, p.u.AsMap, len(p.line)+2))
		what := fmt.Sprintf("%s: %d bytes ending in %q", p.name, len(p.line), p.line[len(p.line)-2:])
		assert.Equal(t, reported, more, what)
		if reported {
			extra++
			assert.True(t, splitByReader(p.line, p.u), what)
		} else if (p.end == "" || p.end == "\r") && len(p.line) <= LineMax+1 {
			assert.Empty(t, LineProblem(p.line, p.u), what)
		}
	}
	assert.Positive(t, extra)
	assert.Less(t, extra, len(probes))
}
