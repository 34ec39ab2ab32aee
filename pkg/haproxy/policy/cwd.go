package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// HAProxy opens a relative file name against its working directory, which
// the configuration moves while it is read. This file mirrors HAProxy
// 3.0.11 (src/cfgparse.c cfg_apply_default_path, readcfgfile,
// cfg_parse_global_def_path; src/flt_spoe.c parse_spoe_flt; the 3.0
// backport of "return to initial cwd only after check_config_validity()"),
// verified by cwd_oracle_test.go:
//
//   - haproxy -c starts in the bundle directory (the checker runs it there
//     with -f <bundle>/haproxy.cfg): that is initial_cwd.
//   - "default-path current" and "default-path config" go back to the
//     bundle directory; "default-path origin <dir>" goes to <dir>, a
//     relative <dir> being relative to the bundle directory (not to the
//     current one), and stays in the bundle directory when <dir> does not
//     exist ("parent" is refused).
//   - Each file readcfgfile() reads (haproxy.cfg, and a SPOE configuration
//     when a "filter spoe" line is parsed) first returns to the bundle
//     directory, then applies the mode again: "config" goes to the
//     directory part of the file's name as written, relative to the bundle
//     directory. Nothing returns to the previous directory afterwards.
//   - Expressions compiled once the configuration is read (use_backend
//     rules, log formats) open their files in the directory the reading
//     ended in.
//
// The policy keeps the set of directories HAProxy may be in (one, unless
// the existence of a directory outside the bundle decides it), checks a
// relative reference against each of them, and again against the last
// ones once the whole configuration is read (recheckDeferred).

// pathMode is default_path_mode.
type pathMode uint8

const (
	pathCurrent pathMode = iota
	pathConfig
	pathParent
	pathOrigin
)

// cwdState is HAProxy's working directory while it reads the
// configuration.
type cwdState struct {
	mode pathMode
	// origin is the "default-path origin" directory, absolute.
	origin string
	// dirs are the directories HAProxy may be in, usually one.
	dirs []string
}

// clone copies the state.
func (c cwdState) clone() cwdState {
	c.dirs = slices.Clone(c.dirs)
	return c
}

// deferredRef is a relative reference, to check again against the
// directories the reading ends in.
type deferredRef struct {
	at     loc
	r      fileRef
	joined string // r.path with its base, as HAProxy joined it
	use    refUse
	dirs   []string // the directories it was checked against
}

// exists says whether abs exists as a directory (dir) or as a file or a
// directory (!dir) when HAProxy runs: known inside the bundle, unknown
// (ok false) elsewhere.
func (s *policyScan) exists(abs string, dir bool) (yes, known bool) {
	if !s.inside(abs) {
		return false, false
	}
	return s.dirs[abs] || (!dir && s.isBundleFile(abs)), true
}

// chdirTo is the set of directories after HAProxy changes into abs from the
// bundle directory: abs when it exists, the bundle directory when it does
// not, both when the policy cannot tell.
func (s *policyScan) chdirTo(abs string) []string {
	yes, known := s.exists(abs, true)
	switch {
	case !known:
		return uniqueDirs(abs, s.baseDir)
	case yes:
		return []string{abs}
	}
	return []string{s.baseDir}
}

// fromBase resolves p against the bundle directory, as a chdir() made
// right after chdir(initial_cwd) does.
func (s *policyScan) fromBase(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Clean(s.baseDir + "/" + p)
}

// setDefaultPath applies "default-path <mode> [<dir>]" after the policy
// accepted it (cfg_parse_global_def_path then cfg_apply_default_path).
func (s *policyScan) setDefaultPath(mode pathMode, origin string) {
	s.cwd.mode = mode
	switch mode {
	case pathOrigin:
		s.cwd.origin = s.fromBase(origin)
		s.cwd.dirs = s.chdirTo(s.cwd.origin)
	default:
		s.cwd.dirs = []string{s.baseDir}
	}
}

// readCfgFile applies the start of readcfgfile() for a SPOE configuration
// named name (as written) that HAProxy opened: back to the bundle
// directory, then the mode again.
func (s *policyScan) readCfgFile(name string) {
	switch s.cwd.mode {
	case pathOrigin:
		s.cwd.dirs = s.chdirTo(s.cwd.origin)
	case pathConfig:
		dir := ""
		if i := strings.LastIndexByte(name, '/'); i > 0 {
			dir = name[:i]
		}
		if dir == "" {
			s.cwd.dirs = []string{s.baseDir}
			return
		}
		s.cwd.dirs = s.chdirTo(s.fromBase(dir))
	default:
		s.cwd.dirs = []string{s.baseDir}
	}
}

// opens says whether HAProxy opens the file name (relative to the current
// directories): yes, no, or unknown (known false).
func (s *policyScan) opens(name string) (yes, known bool) {
	all, none := true, true
	for _, d := range s.cwd.dirs {
		abs := name
		if !filepath.IsAbs(abs) {
			abs = d + "/" + abs
		}
		y, k := s.exists(filepath.Clean(abs), false)
		if !k {
			return false, false
		}
		all, none = all && y, none && !y
	}
	if all == none {
		return false, false
	}
	return all, true
}

// spoeConfig applies a "filter spoe" line HAProxy parses up to
// readcfgfile(): the SPOE file is read, which moves the working directory
// (see readCfgFile). When the policy cannot tell whether the file opens,
// both outcomes stay possible.
func (s *policyScan) spoeConfig(name string) {
	yes, known := s.opens(name)
	if known && !yes {
		return
	}
	before := s.cwd.dirs
	s.readCfgFile(name)
	if !known {
		s.cwd.dirs = uniqueDirs(append(slices.Clone(before), s.cwd.dirs...)...)
	}
}

// uniqueDirs returns dirs without repetitions, in order.
func uniqueDirs(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// recheckDeferred checks every relative reference again against the
// directories the reading of haproxy.cfg ended in (final) that it was not
// checked against.
func (s *policyScan) recheckDeferred(final []string) {
	for _, d := range s.deferred {
		for _, dir := range final {
			if !slices.Contains(d.dirs, dir) {
				s.checkIn(d.at, d.r, d.joined, d.use, dir)
			}
		}
	}
}
