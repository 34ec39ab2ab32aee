package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// optionName is the name HAProxy looks an option up by: the text before
// its first '(' (bind_find_kw, srv_find_kw).
func optionName(w string) string {
	if i := strings.IndexByte(w, '('); i >= 0 {
		return w[:i]
	}
	return w
}

// bindLine handles "<kw> <addr>[,<addr>...] [bind options]" (proxies,
// peers, log-forward, stats socket; src/cfgparse.c str2listener).
func (s *policyScan) bindLine(at loc, kw string, args []cfgtext.Word) {
	if len(args) == 0 {
		return
	}
	w := args[0]
	for _, a := range strings.Split(w.Text, ",") {
		s.checkAddress(at, kw, cfgtext.Word{Text: a, Env: w.Env}, roleListen, s.bases.unixPrefix)
	}
	s.bindOptions(at, kw, args[1:])
}

// defaultBind handles "default-bind [bind options]" (peers).
func (s *policyScan) defaultBind(at loc, kw string, args []cfgtext.Word) {
	s.bindOptions(at, kw, args)
}

// bindOptions walks bind options as bind_parse_args_list does: an option
// consumes its arity; an unknown option is denied.
func (s *policyScan) bindOptions(at loc, kw string, opts []cfgtext.Word) {
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		name := optionName(o.Text)
		n, ok := inventory.BindOptions[name]
		if o.Env || !ok {
			s.add(at, "", kw+": unknown option '"+s.short(o.Text)+"'")
			return
		}
		if n == 1 && i+1 < len(opts) {
			s.option(at, "bind", name, opts[i+1])
		}
		i += n
	}
}

// serverLine handles "<kw> <name> <addr> [server options]" (server, peer,
// nameserver). In a peers section the address of a "server" line is
// optional (the local peer, whose name is the host name, has none), so
// both readings are checked.
func (s *policyScan) serverLine(at loc, kw string, args []cfgtext.Word) {
	if len(args) < 2 {
		return
	}
	if s.section == "peers" && kw == "server" {
		if _, isOpt := inventory.ServerOptions[optionName(args[1].Text)]; isOpt {
			s.serverOptions(at, kw, args[1:])
		}
	}
	if kw == "peer" {
		// The local peer's line also binds its address (cfg_parse_peers ->
		// str2listener); which peer is local depends on the host name.
		s.checkAddress(at, kw, args[1], roleListen, s.bases.unixPrefix)
	}
	s.checkAddress(at, kw, args[1], roleConnect, "")
	s.serverOptions(at, kw, args[2:])
}

// serverTemplate handles "server-template <prefix> <num|range> <fqdn>[:port]
// [server options]".
func (s *policyScan) serverTemplate(at loc, kw string, args []cfgtext.Word) {
	if len(args) < 3 {
		return
	}
	s.checkAddress(at, kw, args[2], roleConnect, "")
	s.serverOptions(at, kw, args[3:])
}

// defaultServer handles "default-server [server options]".
func (s *policyScan) defaultServer(at loc, kw string, args []cfgtext.Word) {
	s.serverOptions(at, kw, args)
}

// serverOptions walks server options as _srv_parse_kw does.
func (s *policyScan) serverOptions(at loc, kw string, opts []cfgtext.Word) {
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		name := optionName(o.Text)
		n, ok := inventory.ServerOptions[name]
		if o.Env || !ok {
			s.add(at, "", kw+": unknown option '"+s.short(o.Text)+"'")
			return
		}
		if n < 0 {
			i += s.sourceArgs(at, kw+" source", opts[i+1:])
			continue
		}
		if n == 1 && i+1 < len(opts) {
			s.option(at, "server", name, opts[i+1])
		}
		i += n
	}
}

// sourceArgs handles "<addr>[:port[-port]] [usesrc <addr>|client|clientip|
// hdr_ip(...)] [interface <name>]" (src/server.c srv_parse_source and the
// proxy "source" keyword) and returns how many words it consumed.
func (s *policyScan) sourceArgs(at loc, what string, args []cfgtext.Word) int {
	if len(args) == 0 {
		return 0
	}
	s.checkAddress(at, what, args[0], roleConnect, "")
	i := 1
	for i+1 < len(args) {
		switch args[i].Text {
		case "usesrc":
			v := args[i+1]
			if v.Text != "client" && v.Text != "clientip" && !strings.HasPrefix(v.Text, "hdr_ip(") {
				s.checkAddress(at, what+" usesrc", v, roleConnect, "")
			}
		case "interface":
		default:
			return i
		}
		i += 2
	}
	return i
}

// sourceLine handles the proxy "source" keyword.
func (s *policyScan) sourceLine(at loc, kw string, args []cfgtext.Word) {
	s.sourceArgs(at, kw, args)
}

// option checks the value v of a bind or server option (where is "bind" or
// "server") against the inventory.
func (s *policyScan) option(at loc, where, name string, v cfgtext.Word) {
	e, ok := entries[entryKey{where, name}]
	if !ok {
		return
	}
	what := where + " " + name
	switch {
	case e.Key != "":
		s.refuse(at, e.Key, what+" is not allowed")
	case e.Class == inventory.ClassAddr:
		s.checkAddress(at, what, v, roleConnect, "")
	case name == "ca-file" || name == "ca-verify-file":
		s.caFile(at, what, v, e.Base)
	case name == "crt-list":
		s.checkPathUse(at, what, v, e, refUse{parse: true, kind: kindCrtList})
	default:
		s.checkPath(at, what, v, e)
	}
}
