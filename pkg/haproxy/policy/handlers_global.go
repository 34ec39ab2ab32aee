package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// defaultPath handles "default-path current|config|parent|origin <dir>"
// (src/cfgparse.c cfg_parse_global_def_path; see cwd.go). The checker runs
// haproxy in the bundle directory, which holds haproxy.cfg, so current and
// config both mean the bundle; an origin directory is relative to it.
func (s *policyScan) defaultPath(at loc, kw string, args []cfgtext.Word) {
	mode, dir := arg(args, 0), arg(args, 1)
	switch {
	case mode.Env:
		s.add(at, "", kw+": a mode built from an environment variable cannot be checked")
	case mode.Text == "current":
		s.setDefaultPath(pathCurrent, "")
	case mode.Text == "config":
		s.setDefaultPath(pathConfig, "")
	case mode.Text == "parent":
		s.add(at, "", kw+": 'parent' leaves the configuration bundle")
	case mode.Text == "origin" && dir.Env:
		s.add(at, "", kw+": a path built from an environment variable cannot be checked")
	case mode.Text == "origin" && dir.Text == "":
		s.add(at, "", kw+": 'origin' expects a directory")
	case mode.Text == "origin":
		if _, ok := s.checkIn(at, fileRef{directive: kw, path: dir.Text, mode: refRead}, dir.Text, refUse{}, s.baseDir); ok {
			s.setDefaultPath(pathOrigin, dir.Text)
		}
	}
}

// unixBind handles "unix-bind [prefix <p>] [mode|user|uid|group|gid <v>]":
// the prefix is prepended, as a string, to every unix socket path bound.
func (s *policyScan) unixBind(at loc, kw string, args []cfgtext.Word) {
	for i := 0; i+1 < len(args); i += 2 {
		if args[i].Text != "prefix" {
			continue
		}
		e, _ := lookupEntry("global", kw)
		if _, ok := s.checkPath(at, kw+" prefix", args[i+1], e); ok {
			s.bases.unixPrefix = args[i+1].Text
		}
	}
}

// luaPrependPath handles "lua-prepend-path <pattern> [path|cpath]": the
// directory of the pattern is read (cpath loads shared objects).
func (s *policyScan) luaPrependPath(at loc, kw string, args []cfgtext.Word) {
	p := arg(args, 0)
	if p.Text == "" && !p.Env {
		return
	}
	p.Text = dirOfPattern(p.Text)
	s.checkPath(at, kw, p, inventory.Entry{Class: inventory.ClassRead})
}

// codeFile handles the code directives whose first argument is a file or
// directory HAProxy loads code from (lua-load, lua-load-per-thread,
// ssl-provider-path): when the operator grants the directive, the code
// must still come from the bundle (or a granted "path:<dir>"). Not
// granted, the directive itself is refused.
func (s *policyScan) codeFile(at loc, kw string, args []cfgtext.Word) {
	if e, ok := lookupEntry(s.section, kw); !ok || !s.allowed[e.Key] {
		return
	}
	s.checkPath(at, kw, arg(args, 0), inventory.Entry{Class: inventory.ClassRead})
}

// statsSocket handles the global "stats socket <addr> [bind options]"
// (src/cli.c cli_parse_global).
func (s *policyScan) statsSocket(at loc, kw string, args []cfgtext.Word) {
	if arg(args, 0).Text != "socket" {
		return
	}
	s.bindLine(at, "stats socket", args[1:])
}

// setBase handles ca-base, crt-base, key-base and server-state-base, in
// global or in a crt-store section: the directory must lie in the bundle,
// and later relative paths are joined to it as written (refs.go). In
// global, HAProxy keeps the first one (ssl_parse_global_path_base,
// cfg_parse_global); a crt-store section replaces it
// (crtstore_parse_path_base).
func (s *policyScan) setBase(at loc, kw string, args []cfgtext.Word) {
	e := inventory.Entry{Class: inventory.ClassDir}
	dir := arg(args, 0).Text
	if _, ok := s.checkPath(at, kw, arg(args, 0), e); !ok {
		dir = ""
	}
	first := func(p *string) {
		if *p == "" {
			*p = dir
		}
	}
	store := s.section == "crt-store"
	switch {
	case kw == "ca-base":
		first(&s.bases.ca)
	case kw == "crt-base" && store:
		s.bases.storeCrt = dir
	case kw == "crt-base":
		first(&s.bases.crt)
	case kw == "key-base" && store:
		s.bases.storeKey = dir
	case kw == "key-base":
		first(&s.bases.key)
	case kw == "server-state-base":
		first(&s.bases.state)
	}
}

// pathList handles a comma-separated list of files.
func (s *policyScan) pathList(at loc, kw string, args []cfgtext.Word) {
	w := arg(args, 0)
	for _, p := range strings.Split(w.Text, ",") {
		s.checkPath(at, kw, cfgtext.Word{Text: p, Env: w.Env}, inventory.Entry{Class: inventory.ClassRead})
	}
}

// connectAddr handles a directive whose first argument is an address
// HAProxy connects to.
func (s *policyScan) connectAddr(at loc, kw string, args []cfgtext.Word) {
	if len(args) > 0 {
		s.checkAddress(at, kw, args[0], roleConnect, "")
	}
}

// caFile checks a CA file argument: "@system-ca" is OpenSSL's own store of
// public CA certificates (src/ssl_ckch.c ssl_store_load_locations_file).
func (s *policyScan) caFile(at loc, what string, w cfgtext.Word, base inventory.Base) {
	if w.Text == "@system-ca" && !w.Env {
		return
	}
	s.checkPath(at, what, w, inventory.Entry{Class: inventory.ClassRead, Base: base})
}

// crtStoreLoad handles "load crt <f> [key <f>] [ocsp <f>] [issuer <f>]
// [sctl <f>] [ocsp-update on|off] [alias <name>]" in a crt-store section
// (src/ssl_ckch.c crtstore_parse_load): relative paths use the section's
// crt-base and key-base.
func (s *policyScan) crtStoreLoad(at loc, kw string, args []cfgtext.Word) {
	for i := 0; i < len(args); i += 2 {
		name := args[i].Text
		if _, ok := inventory.CRTListOptions[name]; !ok || args[i].Env {
			s.add(at, "", "load: unknown option '"+s.short(name)+"'")
			return
		}
		if i+1 >= len(args) {
			return
		}
		e, ok := entries[entryKey{"crt-list", name}]
		if !ok {
			continue
		}
		dir := s.bases.storeCrt
		if e.Base == inventory.BaseKey {
			dir = s.bases.storeKey
		}
		s.checkStorePath(at, "load "+name, args[i+1], dir)
	}
}

// checkStorePath checks a crt-store path that is relative to dir.
func (s *policyScan) checkStorePath(at loc, what string, w cfgtext.Word, dir string) {
	if w.Env {
		s.add(at, "", what+": a path built from an environment variable cannot be checked")
		return
	}
	p := w.Text
	if dir != "" && !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	s.checkRef(at, fileRef{directive: what, path: p, mode: refRead}, refUse{})
}
