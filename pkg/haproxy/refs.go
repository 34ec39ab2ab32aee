package haproxy

import (
	"path/filepath"
	"strings"
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
	base      baseKind
}

// bases are the directories HAProxy resolves relative paths against.
type bases struct {
	// rel is the current directory (default-path; the bundle directory by
	// default, where the checker runs haproxy).
	rel                 string
	ca, crt, key, state string
	storeCrt, storeKey  string // the current crt-store section's own
	unixPrefix          string // unix-bind prefix, prepended as a string
}

// baseDir returns the directory a relative path of kind k is joined to,
// or "" when HAProxy uses the current directory.
func (b *bases) baseDir(k baseKind) string {
	switch k {
	case baseCA:
		return b.ca
	case baseCrt:
		return b.crt
	case baseKey:
		return b.key
	case baseServerState:
		return b.state
	}
	return ""
}

// resolve turns a referenced path into a clean absolute path the way HAProxy
// would look it up: "<base>/<path>" for a relative path that does not start
// with '@' when a base applies, else relative to the current directory.
func (s *policyScan) resolve(p string, base baseKind) string {
	if !filepath.IsAbs(p) {
		if b := s.bases.baseDir(base); b != "" && !strings.HasPrefix(p, "@") {
			p = b + "/" + p
		}
	}
	if !filepath.IsAbs(p) {
		p = s.bases.rel + "/" + p
	}
	return filepath.Clean(p)
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

// checkRef resolves one reference and refuses it when it leaves the
// bundle, reading /dev/null aside; a write must not replace a bundle file.
// It returns the resolved path and whether it was accepted.
func (s *policyScan) checkRef(at loc, r fileRef) (string, bool) {
	if r.path == "" {
		s.add(at, "", r.directive+": empty file name")
		return "", false
	}
	if s.full() {
		return "", false
	}
	abs := s.resolve(r.path, r.base)
	s.refs[abs]++
	switch {
	case r.mode == refRead && abs == "/dev/null":
		return abs, true
	case s.inside(abs):
		if r.mode == refWrite && s.isBundleFile(abs) {
			s.add(at, "", r.directive+": '"+s.showPath(r.path)+"' would overwrite a file of the configuration bundle")
			return abs, false
		}
		return abs, true
	case s.pathAllowed(abs):
		return abs, true
	}
	s.add(at, "", r.directive+": file '"+s.showPath(r.path)+"' is outside the configuration bundle")
	return abs, false
}

// isBundleFile reports whether abs is a file of the bundle.
func (s *policyScan) isBundleFile(abs string) bool {
	_, ok := s.files[abs]
	return ok
}

// checkPath checks a path argument of kind e (read, write or directory).
func (s *policyScan) checkPath(at loc, what string, w cfgWord, e entry) (string, bool) {
	if w.env {
		s.add(at, "", what+": a path built from an environment variable cannot be checked")
		return "", false
	}
	mode := refRead
	if e.class == clsWrite {
		mode = refWrite
	}
	return s.checkRef(at, fileRef{directive: what, path: w.text, mode: mode, base: e.base})
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
