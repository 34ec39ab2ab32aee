package policy

import (
	"path/filepath"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// refMode says how HAProxy uses a referenced path.
type refMode int

const (
	// refRead is a file or directory HAProxy reads (while checking or at
	// start-up) or a unix socket it connects to.
	refRead refMode = iota
	// refWrite is a path HAProxy creates, replaces, removes or binds at
	// run time (pid file, listening unix socket, ring backing file, chroot).
	refWrite
)

// fileRef is one path argument found in the configuration.
type fileRef struct {
	directive string
	path      string
	mode      refMode
	base      inventory.Base
}

// bases are the base directories HAProxy joins to relative paths, as
// written: HAProxy prepends them as strings, and a relative result is then
// relative to the working directory at the time the file is opened.
type bases struct {
	ca, crt, key, state string
	storeCrt, storeKey  string // the current crt-store section's own
	unixPrefix          string // unix-bind prefix, prepended as a string
}

// baseDir returns the directory a relative path of kind k is joined to,
// or "" when HAProxy uses the current directory.
func (b *bases) baseDir(k inventory.Base) string {
	switch k {
	case inventory.BaseCA:
		return b.ca
	case inventory.BaseCrt:
		return b.crt
	case inventory.BaseKey:
		return b.key
	case inventory.BaseServerState:
		return b.state
	}
	return ""
}

// refUse is what HAProxy does with a referenced file besides opening it.
type refUse struct {
	// asMap, asPattern: it reads it as a map or a pattern file; conv is
	// the map converter that reads it ("" for any other use, see
	// mapcheck.go).
	asMap, asPattern bool
	conv             string
	// parse: it parses it as a file of kind (pending.go), from the
	// working directories dirs (nil: the current ones).
	parse bool
	kind  pendingKind
	dirs  []string
}

// joined is a referenced path with its base applied: "<base>/<path>" for
// a relative path that does not start with '@' when a base applies.
func (s *policyScan) joined(p string, base inventory.Base) string {
	if !filepath.IsAbs(p) {
		if b := s.bases.baseDir(base); b != "" && !strings.HasPrefix(p, "@") {
			p = b + "/" + p
		}
	}
	return p
}

// inside reports whether abs lies in the bundle directory.
func (s *policyScan) inside(abs string) bool {
	return abs == s.baseDir || strings.HasPrefix(abs, s.baseDir+"/")
}

// pathAllowed reports whether abs is under an allowed "path:" directory.
func (s *policyScan) pathAllowed(abs string) bool {
	for _, p := range s.paths {
		if p == "/" || abs == p || strings.HasPrefix(abs, p+"/") {
			return true
		}
	}
	return false
}

// checkRef checks one reference against every directory HAProxy may be
// in (cwd.go) and applies its use; a relative one in a file readcfgfile()
// reads is checked again once the reading ends (crt-list entries are
// loaded with their bind line). It returns the path resolved against the
// first directory and whether every check passed.
func (s *policyScan) checkRef(at loc, r fileRef, use refUse) (string, bool) {
	if r.path == "" {
		s.add(at, "", r.directive+": empty file name")
		return "", false
	}
	if s.full() {
		return "", false
	}
	p := s.joined(r.path, r.base)
	if filepath.IsAbs(p) {
		return s.checkIn(at, r, p, use, "/")
	}
	if !s.inCrtList {
		s.deferred = append(s.deferred, deferredRef{at: at, r: r, joined: p, use: use, dirs: s.cwd.dirs})
	}
	first, all := "", true
	for i, dir := range s.cwd.dirs {
		abs, ok := s.checkIn(at, r, p, use, dir)
		if i == 0 {
			first = abs
		}
		all = all && ok
	}
	return first, all
}

// checkIn checks a reference r, its base joined (joined), opened from
// directory dir and applies its use: it must lie in the bundle (reading
// /dev/null aside) or under an allowed "path:" directory, and a write must
// not replace a bundle file.
func (s *policyScan) checkIn(at loc, r fileRef, joined string, use refUse, dir string) (string, bool) {
	if !filepath.IsAbs(joined) {
		joined = dir + "/" + joined
	}
	abs := filepath.Clean(joined)
	s.refs[abs]++
	switch {
	case r.mode == refRead && abs == "/dev/null":
		return abs, true
	case s.leavesBundle(joined):
		s.add(at, "", r.directive+": '"+s.showPath(r.path)+"' goes through '..' out of the configuration bundle")
		return abs, false
	case s.inside(abs):
		if r.mode == refWrite && s.isBundleFile(abs) {
			s.add(at, "", r.directive+": '"+s.showPath(r.path)+"' would overwrite a file of the configuration bundle")
			return abs, false
		}
	case !s.pathAllowed(abs):
		s.add(at, "", r.directive+": file '"+s.showPath(r.path)+"' is outside the configuration bundle")
		return abs, false
	}
	s.applyUse(abs, use)
	return abs, true
}

// applyUse records how HAProxy reads a file it opens.
func (s *policyScan) applyUse(abs string, use refUse) {
	if use.parse {
		s.queue(abs, use)
	}
	if !(use.asMap || use.asPattern) || !s.isBundleFile(abs) {
		return
	}
	s.countConverter(abs, use.conv)
	u := s.mapUse[abs]
	if u == nil {
		u = &mapfile.Use{}
		s.mapUse[abs] = u
	}
	u.AsMap = u.AsMap || use.asMap
	u.AsPattern = u.AsPattern || use.asPattern
}

// leavesBundle reports whether an absolute path, walked component by
// component as the kernel does, is at some point in the bundle directory
// and later outside it, or ends in it after a directory that is neither in
// it nor above it. The checker runs haproxy -c on a copy of the bundle in
// another directory (every mention of the bundle's path rewritten), so
// such a path names a different file there than the one the policy checked
// ("/b/../b/x", "sub/../../b/x").
func (s *policyScan) leavesBundle(p string) bool {
	if !strings.Contains(p, "..") {
		return false
	}
	cur, been, stray := "/", false, false
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, c)
		}
		in := s.inside(cur)
		switch {
		case in:
			been = true
		case been:
			return true
		case !(cur == "/" || strings.HasPrefix(s.baseDir, cur+"/")):
			stray = true
		}
	}
	return stray && s.inside(cur)
}

// isBundleFile reports whether abs is a file of the bundle.
func (s *policyScan) isBundleFile(abs string) bool {
	_, ok := s.files[abs]
	return ok
}

// checkPath checks a path argument of kind e (read, write or directory).
func (s *policyScan) checkPath(at loc, what string, w cfgtext.Word, e inventory.Entry) (string, bool) {
	return s.checkPathUse(at, what, w, e, refUse{})
}

// checkPathUse is checkPath with what HAProxy does with the file.
func (s *policyScan) checkPathUse(at loc, what string, w cfgtext.Word, e inventory.Entry, use refUse) (string, bool) {
	if w.Env {
		s.add(at, "", what+": a path built from an environment variable cannot be checked")
		return "", false
	}
	mode := refRead
	if e.Class == inventory.ClassWrite {
		mode = refWrite
	}
	return s.checkRef(at, fileRef{directive: what, path: w.Text, mode: mode, base: e.Base}, use)
}

// dirOfPattern returns the directory part of a Lua search pattern.
func dirOfPattern(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	if strings.HasPrefix(p, "/") {
		return "/"
	}
	return "."
}
