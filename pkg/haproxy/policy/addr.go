package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// addrFamily is what an address names once its prefix is read.
type addrFamily uint8

const (
	// famNet is an IPv4/IPv6 address or a host name: no file.
	famNet addrFamily = iota
	// famPath is a unix socket path (a file).
	famPath
	// famAbstract is an abstract unix socket (no file, but any local
	// process's socket).
	famAbstract
	// famFD is an inherited file descriptor.
	famFD
	// famRHTTP is a reverse-HTTP server reference (no file).
	famRHTTP
	// famUnknown is a prefix ending in '@' that HAProxy 3.0 does not know.
	famUnknown
)

// addrPrefix is one address prefix of str2sa_range().
type addrPrefix struct {
	prefix string
	family addrFamily
}

// transportPrefixes may precede a family prefix (str2sa_range, src/tools.c).
var transportPrefixes = []string{"stream+", "dgram+", "quic+"}

// familyPrefixes are the family prefixes of HAProxy 3.0's str2sa_range()
// (src/tools.c), matched case-sensitively in this order. "rhttp@" is
// matched on its first three bytes ("rht") and then skips four: HAProxy
// 3.0's own quirk, kept so that the policy sees what HAProxy sees. A path
// starting with '/' is a unix socket without a prefix; anything else is a
// network address or host name.
var familyPrefixes = []addrPrefix{
	{"unix@", famPath}, {"uxdg@", famPath}, {"uxst@", famPath}, {"abns@", famAbstract},
	{"ip@", famNet}, {"ipv4@", famNet}, {"ipv6@", famNet}, {"tcp4@", famNet},
	{"udp4@", famNet}, {"tcp6@", famNet}, {"udp6@", famNet}, {"tcp@", famNet},
	{"udp@", famNet}, {"quic4@", famNet}, {"quic6@", famNet}, {"fd@", famFD},
	{"sockpair@", famFD}, {"rht", famRHTTP},
}

// parsedAddr is one address as str2sa_range() reads it.
type parsedAddr struct {
	family addrFamily
	// prefix is the family prefix as written ("" for none).
	prefix string
	// rest is what follows the prefixes: the path of a unix socket, the
	// descriptor number, the host and port.
	rest string
}

// parseAddress reads the prefixes of one address (after environment
// expansion, which the caller handles).
func parseAddress(a string) parsedAddr {
	for _, t := range transportPrefixes {
		if strings.HasPrefix(a, t) {
			a = a[len(t):]
			break
		}
	}
	for _, p := range familyPrefixes {
		if strings.HasPrefix(a, p.prefix) {
			if p.family == famRHTTP {
				return parsedAddr{family: famRHTTP, prefix: "rhttp@", rest: cut(a, 4)}
			}
			return parsedAddr{family: p.family, prefix: p.prefix, rest: a[len(p.prefix):]}
		}
	}
	if strings.HasPrefix(a, "/") {
		return parsedAddr{family: famPath, rest: a}
	}
	if i := strings.IndexByte(a, '@'); i >= 0 && !strings.ContainsAny(a[:i], ":[]/") {
		return parsedAddr{family: famUnknown, prefix: a[:i+1], rest: a[i+1:]}
	}
	return parsedAddr{family: famNet, rest: a}
}

// cut returns s without its first n bytes, or "" when it is shorter.
func cut(s string, n int) string {
	if len(s) < n {
		return ""
	}
	return s[n:]
}

// addrRole is how HAProxy uses an address.
type addrRole uint8

const (
	// roleListen: HAProxy binds there (bind, stats socket): a unix path is
	// created, so it is a write.
	roleListen addrRole = iota
	// roleConnect: HAProxy connects or sends there (server, log, ...).
	roleConnect
	// roleLog: a log target: standard output and error are allowed.
	roleLog
)

// checkAddress applies the address rules to one address word w (already
// split at commas for bind lines). what names the directive for messages;
// unixPrefix is the unix-bind prefix for listeners.
func (s *policyScan) checkAddress(at loc, what string, w cfgtext.Word, role addrRole, unixPrefix string) {
	text := w.Text
	if strings.IndexByte(text, '$') >= 0 {
		// str2sa_range() runs env_expand() on the word: any '$' expands,
		// whatever the quoting was.
		s.refuseEnv(at)
		w.Env = true
	}
	if w.Env && !addressFamilyFixed(text) {
		s.add(at, "", what+": an address built from an environment variable must start with a network prefix (ipv4@, ipv6@, tcp@, udp@, ...) or a digit so that it cannot name a file")
		return
	}
	pa := parseAddress(text)
	switch pa.family {
	case famPath:
		mode := refRead
		p := pa.rest
		if role == roleListen {
			mode = refWrite
			p = unixPrefix + p
		}
		if role == roleLog && pa.rest == "/dev/log" && !strings.HasPrefix(text, "stream+") {
			return
		}
		if !strings.HasPrefix(p, "/") {
			// HAProxy resolves it against its working directory, which is
			// not the bundle's everywhere the bundle runs.
			s.add(at, "", what+": the unix socket path '"+s.showPath(p)+"' is relative; use an absolute path inside the configuration bundle (pathFor)")
			return
		}
		s.checkRef(at, fileRef{directive: what, path: p, mode: mode}, refUse{})
	case famAbstract:
		s.refuse(at, inventory.KeyAbstractSocket, what+": abstract unix sockets (abns@) are not allowed")
	case famFD:
		if role == roleLog && pa.prefix == "fd@" && (pa.rest == "1" || pa.rest == "2") {
			return
		}
		s.refuse(at, inventory.KeyFD, what+": inherited file descriptors ("+pa.prefix+") are not allowed")
	case famUnknown:
		s.add(at, "", what+": unknown address prefix '"+s.short(pa.prefix)+"'")
	}
}

// addressFamilyFixed reports whether the text before an address's first
// '$' already fixes a network family: a network prefix, or a first
// character that no prefix or path starts with (digit, '[', ':').
func addressFamilyFixed(text string) bool {
	head := text
	if i := strings.IndexByte(text, '$'); i >= 0 {
		head = text[:i]
	}
	if head == "" {
		return false
	}
	if c := head[0]; (c >= '0' && c <= '9') || c == '[' || c == ':' {
		return true
	}
	pa := parseAddress(head)
	return pa.family == famNet && pa.prefix != ""
}
