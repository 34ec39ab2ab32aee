package dataplane

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// server is one server line of a backend or listen section.
type server struct {
	line string // as written
	name string
	addr string // the address word as written
	// ip and port are the address when it is an IP literal with a port
	// (ipPort); any other address (a host name, a variable, a prefix such
	// as unix@, a port range) is not changed at run time.
	ip     netip.Addr
	port   int
	ipPort bool
	// weight is the weight option's value, 1 when there is none (no
	// default-server applies to an eligible proxy).
	weight int
	// disabled: the server starts in maintenance (the last of "disabled"
	// and "enabled" wins).
	disabled bool
	// check and agent: health checks or agent checks are configured, and
	// must be enabled after add server.
	check, agent bool
	// options are the words after the address but the weight option, its
	// value and "disabled": two lines with equal options differ only in
	// what set server changes.
	options []string
	// opaque says why add server cannot be given this line ("" when it
	// can): an option this package does not know the words of, one that
	// add server refuses, a value HAProxy would expand.
	opaque string
}

// maxCLIWords is how many words HAProxy's CLI reads of a command
// (MAX_CLI_ARGS); "add server <b>/<s> <addr>" takes 4 of them.
const maxCLIWords = 64

// parseServer reads a server line's words ("server" <name> <address>
// [options]) as _srv_parse_kw does, with the option table of the policy
// (policy.ServerOption).
func parseServer(line string, words []string) *server {
	s := &server{line: line, weight: 1}
	if len(words) < 3 {
		s.opaque = "the line has no address"
		if len(words) == 2 {
			s.name = words[1]
		}
		return s
	}
	s.name, s.addr = words[1], words[2]
	s.ip, s.port, s.ipPort = ipPort(s.addr)
	switch {
	case !validName(s.name):
		s.opaque = "its name has characters htc does not send to the runtime API"
	case len(words) > maxCLIWords-1:
		s.opaque = "the line has more words than HAProxy's CLI reads"
	}
	opts := words[3:]
	for i := 0; i < len(opts); i++ {
		w := opts[i]
		n, ok := policy.ServerOption(w)
		switch {
		case !ok:
			s.setOpaque("unknown option " + policy.Shorten(w))
			s.options = append(s.options, opts[i:]...)
			return s
		case n < 0 || (n > 0 && i+n >= len(opts)):
			s.setOpaque("option " + policy.Shorten(w) + " takes words this package does not count")
			s.options = append(s.options, opts[i:]...)
			return s
		case notDynamic[w]:
			s.setOpaque("add server refuses option " + w)
		}
		if n == 1 && strings.Contains(opts[i+1], "$") {
			s.setOpaque("the value of " + policy.Shorten(w) + " may name a variable")
		}
		switch w {
		case "weight":
			v, err := strconv.Atoi(opts[i+1])
			if err != nil || v < 0 || v > 256 {
				s.setOpaque("weight " + policy.Shorten(opts[i+1]) + " is not a number from 0 to 256")
				s.options = append(s.options, w, opts[i+1])
			} else {
				s.weight = v
			}
			i++
			continue
		case "disabled":
			s.disabled = true
			continue
		case "enabled":
			s.disabled = false
			continue
		case "check":
			s.check = true
		case "agent-check":
			s.agent = true
		}
		s.options = append(s.options, opts[i:i+n+1]...)
		i += n
	}
	return s
}

func (s *server) setOpaque(why string) {
	if s.opaque == "" {
		s.opaque = why
	}
}

// notDynamic are the server options HAProxy 3.0 does not accept in add
// server (srv_kws entries whose dynamic_ok is 0: src/server.c, src/check.c,
// src/cfgparse-ssl.c, src/cfgparse-tcp.c).
var notDynamic = map[string]bool{
	"enabled": true, "init-addr": true, "log-bufsize": true, "log-proto": true, "max-reuse": true,
	"namespace": true, "non-stick": true, "redir": true, "resolve-net": true, "resolve-opts": true,
	"resolve-prefer": true, "resolvers": true, "socks4": true, "stick": true, "tcp-ut": true,
	"no-agent-check": true, "no-check": true, "no-check-send-proxy": true, "no-check-ssl": true,
	"no-send-proxy-v2-ssl": true, "no-send-proxy-v2-ssl-cn": true, "no-ssl": true, "ssl-reuse": true,
}

// ipPort reads addr as an IP literal and a port, the forms HAProxy's
// str2sa_range reads without resolving a name: "10.0.0.1:8080",
// "[fd00::1]:8080" or "fd00::1:8080" (the last colon starts the port).
// The port is a plain number from 1 to 65535: no range, offset or
// variable.
func ipPort(addr string) (netip.Addr, int, bool) {
	host, port := "", ""
	if rest, ok := strings.CutPrefix(addr, "["); ok {
		h, p, ok := strings.Cut(rest, "]:")
		if !ok {
			return netip.Addr{}, 0, false
		}
		host, port = h, p
	} else {
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return netip.Addr{}, 0, false
		}
		host, port = addr[:i], addr[i+1:]
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" || ip.Is4In6() {
		return netip.Addr{}, 0, false
	}
	if port == "" || len(port) > 5 || strings.TrimLeft(port, "0123456789") != "" {
		return netip.Addr{}, 0, false
	}
	p, _ := strconv.Atoi(port)
	if p < 1 || p > 65535 {
		return netip.Addr{}, 0, false
	}
	return ip, p, true
}

// validName reports whether name is a proxy or server name HAProxy accepts
// (invalid_char: letters, digits, '.', ':', '_', '-'): such a name is sent
// to the runtime API as it is.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isPlain(c) || c == ':') {
			return false
		}
	}
	return true
}

// sameButRuntime reports whether a and b differ at most in what set server
// changes: the address and port (both IP literals), the weight and the
// maintenance state.
func sameButRuntime(a, b *server) bool {
	return a.opaque == "" && b.opaque == "" && a.ipPort && b.ipPort && slices.Equal(a.options, b.options)
}

// cliWord escapes w for HAProxy's CLI: every byte but letters, digits and
// ".:_-/@=,()+%[]" is preceded by a backslash, which the CLI removes
// (cli_parse_request) and the master CLI passes through (pcli_parse_request);
// so a space, a ';' or a backslash in a value reaches the parser as written.
func cliWord(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !isPlain(c) && !strings.ContainsRune(":/@=,()+%[]", rune(c)) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
