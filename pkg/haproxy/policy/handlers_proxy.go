package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// filterNames are the filters of HAProxy 3.0 (`haproxy -dKflt`;
// src/filters.c and each flt_*.c, addons/ot).
var filterNames = inventory.NewWordSet("bwlim-in bwlim-out cache compression fcgi-app opentracing spoe trace")

// logLine handles "log global|<target> ..." and "log-stderr" (src/log.c
// parse_logger: stdout and stderr are fd@1 and fd@2, ring@ and backend@
// name no file, anything else is an address).
func (s *policyScan) logLine(at loc, kw string, args []cfgtext.Word) {
	t := arg(args, 0)
	if t.Env {
		s.checkAddress(at, kw, t, roleLog, "")
		return
	}
	switch {
	case t.Text == "" || t.Text == "global" || t.Text == "stdout" || t.Text == "stderr":
	case strings.HasPrefix(t.Text, "ring@") || strings.HasPrefix(t.Text, "backend@"):
	default:
		s.checkAddress(at, kw, t, roleLog, "")
	}
}

// mailer handles "mailer <name> <addr>".
func (s *policyScan) mailer(at loc, kw string, args []cfgtext.Word) {
	if len(args) > 1 {
		s.checkAddress(at, kw, args[1], roleConnect, "")
	}
}

// httpRule handles http-request, http-response and http-after-response:
// the action must be known, the file of the set-map, del-map, add-acl and
// del-acl actions and of the reply options must lie in the bundle.
func (s *policyScan) httpRule(at loc, kw string, args []cfgtext.Word) {
	act := arg(args, 0)
	if act.Env {
		s.add(at, "", kw+": an action built from an environment variable cannot be checked")
		return
	}
	name, ok := lookupAction(kw, act.Text)
	if !ok {
		s.add(at, "", kw+": unknown action '"+s.short(act.Text)+"'")
		return
	}
	switch name {
	case "set-map", "del-map", "add-acl", "del-acl":
		// parse_http_set_map: the file is word[8:len-1], whatever the
		// characters at 7 and len-1 are.
		w := act.Text
		if len(w) < 9 {
			s.add(at, "", kw+" "+name+": missing file name")
			return
		}
		s.useMapFile(at, kw+" "+name, cfgtext.Word{Text: w[8 : len(w)-1]}, name == "set-map" || name == "del-map", "")
	}
	s.replyOptions(at, kw, args[1:])
}

// actionSet is one rule set's actions: exact names (prefix actions
// included) and prefix actions.
type actionSet struct {
	exact    map[string]bool
	prefixes []string
}

// actionSets is inventory.HTTPActions parsed once.
var actionSets = func() map[string]actionSet {
	m := make(map[string]actionSet, len(inventory.HTTPActions))
	for kw, list := range inventory.HTTPActions {
		set := actionSet{exact: map[string]bool{}}
		for _, a := range strings.Fields(list) {
			if p, ok := strings.CutSuffix(a, "*"); ok {
				set.prefixes = append(set.prefixes, p)
				a = p
			}
			set.exact[a] = true
		}
		m[kw] = set
	}
	return m
}()

// lookupAction finds the action of word w as action_lookup does: an exact
// name, else the longest prefix action. Lua actions ("lua.<name>") exist
// only after lua-load, which the policy refuses on its own.
func lookupAction(kw, w string) (string, bool) {
	acts := actionSets[kw]
	if acts.exact[w] {
		return w, true
	}
	best := ""
	for _, a := range acts.prefixes {
		if strings.HasPrefix(w, a) && len(a) > len(best) {
			best = a
		}
	}
	if best == "" && strings.HasPrefix(w, "lua.") {
		return w, true
	}
	return best, best != ""
}

// replyOptions checks the file options of an HTTP reply (return, deny,
// tarpit, http-error: src/http_htx.c http_parse_http_reply). Every
// "file", "lf-file" and "errorfile" word is taken as one.
func (s *policyScan) replyOptions(at loc, kw string, args []cfgtext.Word) {
	for i := 0; i+1 < len(args); i++ {
		switch args[i].Text {
		case "file", "lf-file", "errorfile":
			e := entries[entryKey{"reply", args[i].Text}]
			s.checkPath(at, kw+" "+args[i].Text, args[i+1], e)
			i++
		}
	}
}

// checkConnect handles "tcp-check connect ... addr <addr>" and its
// http-check twin (src/tcpcheck.c parse_tcpcheck_connect).
func (s *policyScan) checkConnect(at loc, kw string, args []cfgtext.Word) {
	if arg(args, 0).Text != "connect" {
		return
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i].Text == "addr" {
			s.checkAddress(at, kw+" connect addr", args[i+1], roleConnect, "")
		}
	}
}

// optionLine handles "option <name>": option external-check runs commands.
func (s *policyScan) optionLine(at loc, kw string, args []cfgtext.Word) {
	if o := arg(args, 0); o.Text == "external-check" || o.Env {
		s.refuseDirective(at, "external-check")
	}
}

// externalCheck handles "external-check command <file>|path <PATH>".
func (s *policyScan) externalCheck(at loc, kw string, args []cfgtext.Word) {
	if arg(args, 0).Text == "command" {
		s.checkPath(at, kw+" command", arg(args, 1), inventory.Entry{Class: inventory.ClassRead})
	}
}

// filter handles "filter <name> [args]" (src/filters.c parse_filter).
func (s *policyScan) filter(at loc, kw string, args []cfgtext.Word) {
	name := arg(args, 0)
	if name.Env || !filterNames[name.Text] {
		s.add(at, "", "unknown filter '"+s.short(name.Text)+"'")
		return
	}
	e, ok := entries[entryKey{"filter", name.Text}]
	if !ok {
		return
	}
	if e.Key != "" {
		s.refuse(at, e.Key, "filter '"+name.Text+"' is not allowed")
	}
	var use refUse
	before := s.cwd.clone()
	if name.Text == "spoe" {
		if file, ok := spoeFile(args); ok && s.sectionName != "defaults" && !s.rejected {
			s.spoeConfig(file)
		}
		use = refUse{parse: true, kind: kindSPOE, dirs: s.cwd.dirs}
	}
	// The configuration file is opened from the directory before the line.
	after := s.cwd
	s.cwd = before
	for i := 1; i+1 < len(args); i++ {
		if args[i].Text == "config" {
			s.checkPathUse(at, "filter "+name.Text+" config", args[i+1], e, use)
		}
	}
	s.cwd = after
}

// spoeFile returns the configuration file of "filter spoe [engine <name>]
// config <file>" when parse_spoe_flt() (src/flt_spoe.c) gets as far as
// reading it: every option known and given a value (the last "config"
// wins), up to the first empty word.
func spoeFile(args []cfgtext.Word) (string, bool) {
	file := ""
	for pos := 1; pos < len(args) && args[pos].Text != ""; pos += 2 {
		switch args[pos].Text {
		case "config", "engine":
			if pos+1 >= len(args) || args[pos+1].Text == "" {
				return "", false
			}
			if args[pos].Text == "config" {
				file = args[pos+1].Text
			}
		default:
			return "", false
		}
	}
	return file, file != ""
}

// serverStateFileName handles "server-state-file-name [<file>|use-backend-name]".
func (s *policyScan) serverStateFileName(at loc, kw string, args []cfgtext.Word) {
	w := arg(args, 0)
	if w.Text == "" || w.Text == "use-backend-name" {
		return
	}
	e, _ := lookupEntry("proxy", kw)
	s.checkPath(at, kw, w, e)
}
