package dataplane

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// view is what the decision reads of one haproxy.cfg: the server lines of
// each backend and listen section, and every other line as written.
type view struct {
	// rest is every line but the server lines of backend and listen
	// sections, in order. Two configurations whose rest is equal differ at
	// most in those server lines.
	rest []string
	// restLine are the line numbers of rest's lines.
	restLine []int
	// proxies are the backend and listen sections by name.
	proxies map[string]*proxy
	// order lists the proxies in the order of the file.
	order []string
	// conditional is the first line that starts with '.' (a conditional
	// block or a message directive, .if ... .endif): HAProxy may apply
	// some lines and not others, which this reading does not follow.
	conditional string
}

// proxy is one backend or listen section.
type proxy struct {
	name string
	// servers are its server lines, in order.
	servers []*server
	// byName indexes servers; dup is a name used twice ("" when none).
	byName map[string]*server
	dup    string
	// template: it has a server-template line (servers this reading
	// does not see).
	template bool
	// settings are those in effect once the section is read.
	settings settings
	// Whether servers may be added, removed and changed at run time
	// (eligible), and why not (ineligible: a reason for a log line).
	ineligible string
}

// settings are what a defaults section passes on to the proxies that use
// it: their balance algorithm, mode and whether a default-server line
// applies.
type settings struct {
	balance       string // the algorithm word of the balance line, "" when none
	mode          string // the mode line's word, "" when none
	defaultServer bool
}

// readConfig reads cfg as HAProxy splits it into sections (policy.Lines,
// policy.SectionHeader) and words (policy.Words). Only the words of lines
// that may matter are cut: server, balance, mode, default-server and
// server-template lines, and every line whose first word is not plain text
// (quoted, escaped, with a variable).
func readConfig(cfg string) *view {
	v := &view{proxies: map[string]*proxy{}}
	named := map[string]settings{} // defaults sections by name
	var last settings              // the last defaults section read
	var sec section                // the section being read
	for n, line := range policy.Lines(cfg) {
		if header, ok := policy.SectionHeader(line); ok {
			sec.end(v, &last, named)
			sec = v.begin(header, last, named)
			v.rest, v.restLine = append(v.rest, line), append(v.restLine, n)
			continue
		}
		kw, words := firstWord(line)
		if strings.HasPrefix(kw, ".") && v.conditional == "" {
			v.conditional = policy.Shorten(strings.TrimSpace(line))
		}
		if sec.proxy != nil && kw == "server" {
			if words == nil {
				words = policy.Words(line)
			}
			sec.proxy.add(parseServer(line, words))
			continue
		}
		v.rest, v.restLine = append(v.rest, line), append(v.restLine, n)
		if sec.proxy == nil && !sec.defaults {
			continue
		}
		switch kw {
		case "balance", "mode":
			if words == nil {
				words = policy.Words(line)
			}
			value := ""
			if len(words) > 1 {
				value = words[1]
			}
			if kw == "balance" {
				sec.own.balance = value
			} else {
				sec.own.mode = value
			}
		case "default-server":
			sec.own.defaultServer = true
		case "server-template", "dynamic-cookie-key":
			if sec.proxy != nil && kw == "server-template" {
				sec.proxy.template = true
			}
			if sec.proxy != nil && sec.proxy.ineligible == "" {
				sec.proxy.ineligible = "it has a " + kw + " line"
			}
		}
	}
	sec.end(v, &last, named)
	return v
}

// section is the section readConfig is in.
type section struct {
	defaults bool   // a defaults section
	name     string // its name, for a defaults section ("" when none)
	proxy    *proxy // the backend or listen section; nil for others
	own      settings
}

// begin starts the section whose header words are header: a backend or
// listen section starts from the settings of its defaults section (the
// last one, or the one named after "from"); a defaults section starts
// afresh ("reset by the next defaults section"), or from the one named
// after "from".
func (v *view) begin(header []string, last settings, named map[string]settings) section {
	args := header[1:]
	base, unknown := last, ""
	if header[0] == "defaults" {
		base = settings{}
	}
	if n := len(args); n >= 2 && args[n-2] == "from" {
		b, ok := named[args[n-1]]
		if !ok {
			unknown = "it is based on defaults " + policy.Shorten(args[n-1]) + ", which htc did not find before it"
		}
		base, args = b, args[:n-2]
	}
	name := ""
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if len(args) > 0 {
		unknown = "its section header has words htc does not read: " + policy.Shorten(strings.Join(header, " "))
	}
	switch header[0] {
	case "defaults":
		return section{defaults: true, name: name, own: base}
	case "backend", "listen":
		if name == "" {
			return section{}
		}
		p := &proxy{name: name, byName: map[string]*server{}, ineligible: unknown}
		if _, seen := v.proxies[name]; seen {
			p.ineligible = "another section has the same name"
		} else {
			v.order = append(v.order, name)
		}
		v.proxies[name] = p
		return section{proxy: p, own: base}
	}
	return section{}
}

// end closes the section: a defaults section becomes the last one (and
// named, when it has a name); a proxy decides whether it is eligible.
func (s *section) end(v *view, last *settings, named map[string]settings) {
	switch {
	case s.defaults:
		*last = s.own
		if s.name != "" {
			named[s.name] = s.own
		}
	case s.proxy != nil:
		s.proxy.decide(s.own)
	}
}

// firstWord returns the first word of line. A line that starts with plain
// text (letters, digits, '-', '_', '.') followed by a blank or its end is
// not tokenized (words is nil); any other line is, as HAProxy reads it,
// and its words are returned.
func firstWord(line string) (kw string, words []string) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	j := i
	for j < len(line) && isPlain(line[j]) {
		j++
	}
	if j == len(line) || line[j] == ' ' || line[j] == '\t' {
		return line[i:j], nil
	}
	if line[j] == '#' && j == i {
		return "", nil // a comment
	}
	words = policy.Words(line)
	if len(words) == 0 {
		return "", words
	}
	return words[0], words
}

func isPlain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// add records a server line.
func (p *proxy) add(s *server) {
	if _, dup := p.byName[s.name]; dup && p.dup == "" {
		p.dup = s.name
	}
	p.byName[s.name] = s
	p.servers = append(p.servers, s)
}

// decide sets ineligible once the section is read, from the settings in
// effect (the defaults section's, overridden by the proxy's own).
func (p *proxy) decide(s settings) {
	p.settings = s
	switch {
	case p.ineligible != "":
	case p.dup != "":
		p.ineligible = "two servers are named " + policy.Shorten(p.dup)
	case s.defaultServer:
		p.ineligible = "a default-server line applies to it (add server would not apply it)"
	case !dynamicBalance(s.balance):
		p.ineligible = "its balance algorithm is " + policy.Shorten(s.balance) +
			" (servers added or removed at run time would be chosen otherwise than after a reload)"
	case s.mode != "" && s.mode != "http" && s.mode != "tcp":
		p.ineligible = "its mode is " + policy.Shorten(s.mode)
	}
}

// dynamicBalance reports whether a backend balancing with algo chooses among
// servers added at run time as it would among the same servers after a
// reload: roundrobin (the default), leastconn and random weigh servers by
// their weight and state only. The others are refused by add server
// (static-rr, map-based hashing), or depend on the servers' ids or order
// (first, consistent hashing), which differ between servers added at run
// time and the same servers read from the file.
func dynamicBalance(algo string) bool {
	switch {
	case algo == "", algo == "roundrobin", algo == "leastconn", algo == "random", strings.HasPrefix(algo, "random("):
		return true
	}
	return false
}
