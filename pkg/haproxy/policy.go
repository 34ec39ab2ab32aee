package haproxy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// EnvExpansionKey is the AllowedDirectives entry that permits environment
// variable expansion ("${VAR}", "$VAR" inside double quotes) and `.if
// defined(VAR)` conditions.
const EnvExpansionKey = "env-expansion"

// AllowPathPrefix starts an AllowedDirectives entry that permits file
// references under one absolute directory outside the bundle, for example
// "path:/etc/ssl/certs" or "path:/var/run/haproxy".
const AllowPathPrefix = "path:"

// maxShownPath caps how much of a refused path a reason repeats.
const maxShownPath = 128

// dangerousDirective reports whether kw (lower-cased) is a directive the
// policy refuses unless allowed: it runs code, loads libraries, changes the
// environment or lets HAProxy fork or change its identity.
func dangerousDirective(kw string) bool {
	switch kw {
	case "lua-load", "lua-load-per-thread", "lua-prepend-path",
		"ssl-provider", "ssl-provider-path", "ssl-engine",
		"setenv", "presetenv", "resetenv", "unsetenv",
		"external-check", "insecure-fork-wanted", "insecure-setuid-wanted",
		"program":
		return true
	}
	return false
}

// messageDirective reports whether kw is a conditional-block message
// directive, which prints its argument while the configuration is parsed.
func messageDirective(kw string) bool {
	switch kw {
	case ".diag", ".notice", ".warning", ".alert":
		return true
	}
	return false
}

// sectionKeyword reports whether kw starts a new configuration section.
func sectionKeyword(kw string) bool {
	switch kw {
	case "global", "defaults", "frontend", "backend", "listen", "peers",
		"resolvers", "userlist", "mailers", "program", "http-errors", "ring",
		"cache", "fcgi-app", "log-forward":
		return true
	}
	return false
}

// refMode says how HAProxy uses a referenced path.
type refMode int

const (
	// refRead is a file or directory HAProxy reads (while checking or at
	// start-up) or a unix socket it connects to.
	refRead refMode = iota
	// refWrite is a path HAProxy creates, replaces or changes into at run
	// time (pid file, listening unix socket, chroot).
	refWrite
)

// baseKind says which *-base directive applies to a relative path.
type baseKind int

const (
	baseNone baseKind = iota
	baseCA
	baseCrt
	baseServerState
)

// fileRef is one path argument found in the configuration.
type fileRef struct {
	directive string
	path      string
	mode      refMode
	base      baseKind
	crtList   bool
}

// policyScan is the state of one policy scan over a bundle.
type policyScan struct {
	baseDir  string
	allowed  map[string]bool
	paths    []string
	files    map[string]string
	findings []Finding

	relBase         string
	caBase, crtBase string
	stateBase       string
}

// CheckPolicy applies the safety policy to a rendered bundle without
// parsing it with anything that could execute code. It returns nil or a
// *PolicyError listing every violation. allowed holds directive names
// ("lua-load", "setenv", "program", ...), EnvExpansionKey, and
// AllowPathPrefix entries; names match case-insensitively.
//
// Rules (HAProxy 2.6 semantics, verified against haproxy 2.6.12):
//
//   - Each line is cut into words as HAProxy does (quotes removed and
//     concatenated, \xNN and other escapes decoded, a decoded NUL ends the
//     word, '#' outside quotes starts a comment). HAProxy has no line
//     continuation; it ends a line at '\r' and at a NUL byte and ignores the
//     rest, but the policy scans those remainders too. A NUL byte anywhere
//     is refused.
//   - The first word (after "no"/"default", and the option name after
//     "option") is compared case-insensitively (HAProxy itself is
//     case-sensitive) with the dangerous directives. Words elsewhere on a
//     line, comments and names such as a backend "setenv-api" do not match.
//   - "${" anywhere in haproxy.cfg, and "$" followed by a name, "{" or "."
//     inside double quotes (what HAProxy expands), are refused under
//     EnvExpansionKey, as is ".if"/".elif" with defined(): the checker's
//     environment is scrubbed, so such a config would be checked under
//     different conditions than it runs with.
//   - .diag/.notice/.warning/.alert containing "$" are refused under their
//     own name (they print what they expand).
//   - Every path argument of a directive that reads or writes files (see
//     refsOf) must lie inside the bundle directory after relative paths are
//     resolved against it (honouring ca-base, crt-base, server-state-base
//     and default-path) and cleaned. /dev/null is accepted for reads (the
//     common `errorfile 408 /dev/null`), never for writes. A path under an
//     allowed "path:<dir>" entry is accepted. crt-list files of the bundle
//     are scanned for their certificate and CA paths as well.
//   - Bundle file names must be local, clean, slash-separated paths.
func CheckPolicy(b *bundle.Bundle, allowed []string) error {
	s := newPolicyScan(b, allowed)
	s.checkNames(b)
	s.scanConfig(b.Config)
	if len(s.findings) == 0 {
		return nil
	}
	return &PolicyError{Findings: s.findings}
}

// newPolicyScan prepares a scan of b.
func newPolicyScan(b *bundle.Bundle, allowed []string) *policyScan {
	base := filepath.Clean(b.BaseDir)
	s := &policyScan{
		baseDir: base,
		relBase: base,
		allowed: make(map[string]bool, len(allowed)),
		files:   make(map[string]string),
	}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if strings.HasPrefix(a, AllowPathPrefix) {
			p := strings.TrimSpace(strings.TrimPrefix(a, AllowPathPrefix))
			if filepath.IsAbs(p) {
				s.paths = append(s.paths, filepath.Clean(p))
			}
			continue
		}
		s.allowed[strings.ToLower(a)] = true
	}
	for _, f := range b.AllFiles() {
		s.files[filepath.Join(base, filepath.FromSlash(f.RelPath))] = f.Content
	}
	return s
}

// add records a finding.
func (s *policyScan) add(file string, line int, key, msg string) {
	s.findings = append(s.findings, Finding{File: file, Line: line, Key: key, Message: msg})
}

// refuse records a refused directive unless it is allowed.
func (s *policyScan) refuse(file string, line int, key string) {
	if s.allowed[key] {
		return
	}
	s.add(file, line, key, fmt.Sprintf("directive '%s' is not allowed (add it to spec.allowedDirectives to permit it)", key))
}

// refuseEnv records an environment expansion unless it is allowed.
func (s *policyScan) refuseEnv(file string, line int) {
	if s.allowed[EnvExpansionKey] {
		return
	}
	s.add(file, line, EnvExpansionKey, fmt.Sprintf("environment variable expansion is not allowed (add '%s' to spec.allowedDirectives to permit it)", EnvExpansionKey))
}

// checkNames refuses bundle file names that could escape the bundle.
func (s *policyScan) checkNames(b *bundle.Bundle) {
	for _, f := range b.AllFiles()[1:] {
		if err := bundle.CheckName(f.Name); err != nil {
			s.add(string(f.Kind)+":"+shorten(f.Name), 0, "", err.Error())
		}
	}
}

// scanConfig scans haproxy.cfg line by line.
func (s *policyScan) scanConfig(cfg string) {
	const file = bundle.ConfigFileName
	envLine := 0
	physicalLines(cfg, func(n int, piece string) {
		if strings.IndexByte(piece, 0) >= 0 {
			return // cannot happen: physicalLines cuts at NUL
		}
		lw := splitLine(piece)
		if (lw.envExpansion || strings.Contains(piece, "${")) && envLine != n {
			envLine = n
			s.refuseEnv(file, n)
		}
		s.scanWords(file, n, piece, lw.words)
	})
	if i := strings.IndexByte(cfg, 0); i >= 0 {
		s.add(file, 1+strings.Count(cfg[:i], "\n"), "", "NUL byte in configuration")
	}
}

// scanWords applies the directive and file rules to one line's words.
func (s *policyScan) scanWords(file string, n int, raw string, words []string) {
	if len(words) == 0 {
		return
	}
	kw := strings.ToLower(words[0])
	args := words[1:]
	if (kw == "no" || kw == "default") && len(args) > 0 {
		kw, args = strings.ToLower(args[0]), args[1:]
	}
	if kw == "option" && len(args) > 0 && strings.ToLower(args[0]) == "external-check" {
		s.refuse(file, n, "external-check")
	}
	if dangerousDirective(kw) {
		s.refuse(file, n, kw)
	}
	switch {
	case kw == ".if" || kw == ".elif":
		if strings.Contains(strings.ToLower(strings.Join(args, " ")), "defined(") {
			s.refuseEnv(file, n)
		}
	case messageDirective(kw):
		if strings.Contains(raw, "$") {
			s.refuse(file, n, kw)
		}
	}
	for _, r := range refsOf(kw, args) {
		s.checkRef(file, n, r)
	}
}

// checkRef resolves one reference and refuses it when it leaves the bundle.
// Base directives update the scan state once they are accepted.
func (s *policyScan) checkRef(file string, n int, r fileRef) {
	abs, ok := s.resolve(r)
	if !ok {
		s.add(file, n, "", fmt.Sprintf("file '%s' is outside the configuration bundle", shorten(r.path)))
		return
	}
	inside := abs == s.baseDir || strings.HasPrefix(abs, s.baseDir+string(filepath.Separator))
	if !inside && !s.pathAllowed(abs) && !(r.mode == refRead && abs == "/dev/null") {
		s.add(file, n, "", fmt.Sprintf("file '%s' is outside the configuration bundle", shorten(r.path)))
		return
	}
	switch r.directive {
	case "ca-base":
		s.caBase = abs
	case "crt-base":
		s.crtBase = abs
	case "server-state-base":
		s.stateBase = abs
	case "default-path":
		s.relBase = abs
	}
	if r.crtList {
		if content, ok := s.files[abs]; ok {
			s.scanCrtList(relName(s.baseDir, abs), content)
		}
	}
}

// resolve turns a referenced path into a clean absolute path the way HAProxy
// would look it up. ok is false for paths the policy cannot place (empty).
func (s *policyScan) resolve(r fileRef) (string, bool) {
	p := r.path
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		switch {
		case r.base == baseCA && s.caBase != "":
			p = filepath.Join(s.caBase, p)
		case r.base == baseCrt && s.crtBase != "":
			p = filepath.Join(s.crtBase, p)
		case r.base == baseServerState && s.stateBase != "":
			p = filepath.Join(s.stateBase, p)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.relBase, p)
	}
	return filepath.Clean(p), true
}

// pathAllowed reports whether abs is under an allowed "path:" directory.
func (s *policyScan) pathAllowed(abs string) bool {
	for _, p := range s.paths {
		if abs == p || strings.HasPrefix(abs, p+string(filepath.Separator)) || p == "/" {
			return true
		}
	}
	return false
}

// scanCrtList checks the certificate and CA paths of a crt-list file. Each
// line is "<crtfile> [ssl options] [sni filters]".
func (s *policyScan) scanCrtList(name, content string) {
	physicalLines(content, func(n int, piece string) {
		words := splitLine(piece).words
		if len(words) == 0 {
			return
		}
		s.checkRef(name, n, fileRef{directive: "crt-list", path: words[0], base: baseCrt})
		for i := 1; i+1 < len(words); i++ {
			w := strings.Trim(words[i], "[]")
			if base, ok := sslFileOption(w); ok {
				s.checkRef(name, n, fileRef{directive: w, path: strings.TrimSuffix(words[i+1], "]"), base: base})
			}
		}
	})
}

// relName is abs relative to base, slash-separated, for finding locations.
func relName(base, abs string) string {
	if r, err := filepath.Rel(base, abs); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.Base(abs)
}

// shorten caps a user-supplied string repeated in a reason.
func shorten(s string) string {
	if len(s) <= maxShownPath {
		return s
	}
	return s[:maxShownPath] + "…"
}

// DangerousDirectives lists every AllowedDirectives entry the policy
// understands, besides the "path:<dir>" form: the refused directives, the
// conditional-block message directives, and EnvExpansionKey.
func DangerousDirectives() []string {
	return []string{
		"lua-load", "lua-load-per-thread", "lua-prepend-path",
		"ssl-provider", "ssl-provider-path", "ssl-engine",
		"setenv", "presetenv", "resetenv", "unsetenv",
		"external-check", "insecure-fork-wanted", "insecure-setuid-wanted",
		"program", ".diag", ".notice", ".warning", ".alert", EnvExpansionKey,
	}
}
