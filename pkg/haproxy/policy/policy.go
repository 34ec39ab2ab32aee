package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// EnvExpansionKey is the AllowedDirectives entry that permits environment
// access: expansion ("${VAR}", "$VAR" inside double quotes, '$' in an
// address) and the env() sample fetch. A condition that reads the
// environment (`.if defined(VAR)`, `.if "$VAR"`) is refused even then: the
// checker's environment is not the one HAProxy runs with.
const EnvExpansionKey = inventory.KeyEnvExpansion

// AllowPathPrefix starts an AllowedDirectives entry that permits file
// references under one absolute directory outside the bundle, for example
// "path:/etc/ssl/certs" or "path:/var/run/haproxy".
const AllowPathPrefix = "path:"

// maxShown caps how much of a user-supplied string a reason repeats.
const maxShown = 64

// loc is a place in a bundle file.
type loc struct {
	file string
	line int
}

// policyScan is the state of one policy scan over a bundle.
type policyScan struct {
	baseDir  string
	allowed  map[string]bool
	paths    []string
	files    map[string]string // absolute path -> content
	dirs     map[string]bool   // absolute directories of the bundle
	findings []Finding
	seen     map[Finding]bool
	codeAt   []loc // where an allowed code directive is used

	bases       bases
	cwd         cwdState      // HAProxy's working directory (cwd.go)
	deferred    []deferredRef // relative references (cwd.go)
	section     string        // keyword list of the current section ("" outside)
	sectionName string        // its header keyword, for messages
	blocks      condBlocks    // the conditional blocks of the current file (cfgblock.go)
	version     string        // the checker's HAProxy version, "" when unknown
	needVersion bool          // a condition needed the unknown version
	rejected    bool          // HAProxy rejects the current line (parse error)
	ghost       bool          // scanning text HAProxy ignores (scanIgnored)
	inCrtList   bool          // scanning a crt-list
	// mapUse records how HAProxy reads each bundle file used as a map or
	// pattern file (see mapcheck.go).
	mapUse map[string]*mapfile.Use
	// refs counts the file references to each absolute path (checkRef),
	// and looseRefs those that are plain-string map converters (see
	// looseMaps); alone counts those that are converters of
	// aloneConverter (see aloneMaps).
	refs, looseRefs map[string]int
	alone           map[string]aloneUse
	// pending are bundle files HAProxy parses on the configuration's
	// behalf (crt-lists, SPOE files), scanned after haproxy.cfg.
	pending []pendingFile
	scanned map[string]bool
	kinds   map[string]bundle.Kind // absolute path -> kind of bundle file
	dropped int                    // findings beyond maxFindings
	unknown map[unknownKey]bool    // unknown keywords already reported
	// tok and tokAll are reused for every line (the checker's view and
	// the every-variable-set view).
	tok, tokAll cfgtext.Tokenizer
	// clean are the map contents checked clean before (Scans), nil when
	// every map is checked.
	clean *cleanMaps
}

// Check applies the safety policy to a rendered bundle without
// parsing it with anything that could execute code. It returns nil or a
// *Error listing every violation. allowed holds directive names
// ("lua-load", "setenv", "program", ...), EnvExpansionKey, the other Key*
// constants and AllowPathPrefix entries; names match case-insensitively.
//
// The rules follow HAProxy 3.0 (verified against haproxy 3.0.11):
//
//   - Lines are cut into words exactly as HAProxy does (package cfgtext); text
//     HAProxy ignores (after a NUL or a line-ending '\r') is scanned too,
//     without changing the reading of the next lines, and a NUL byte is
//     refused.
//   - Only the lines HAProxy applies are applied: the conditional blocks
//     are evaluated as readcfgfile() and src/cfgcond.c do (cfgblock.go,
//     package cfgcond). A condition HAProxy rejects is refused, and so is one whose
//     value the policy cannot know before HAProxy runs (the environment,
//     defined(), feature(), enabled(), the SSL library); version_atleast()
//     and version_before() need the version (CheckVersion).
//   - Every keyword must be one HAProxy 3.0 accepts in its section
//     (inventory/keywords30.go), every bind and server option, http action, filter
//     and address prefix must be known: what the policy cannot classify is
//     denied. Keywords are case-sensitive, as in HAProxy.
//   - Directives, options and filters that load code, change the
//     environment or need privileges (inventory/table.go) are refused
//     unless allowed.
//   - Environment access is refused unless EnvExpansionKey is allowed:
//     "$NAME"/"${NAME}" inside double quotes, any '$' in an address (HAProxy
//     expands those whatever the quoting), and env(). Even
//     when allowed, expansions are refused where the policy could no longer
//     classify the line (a keyword, file or address built from one, a
//     ${NAME[*]} list, an unset variable gluing words) and for the values
//     that hold a host name or a path (HAPROXY_LOCALPEER, HAPROXY_CFGFILES,
//     .FILE). .diag/.notice/.warning/.alert with an expansion are refused
//     under their own name (they print it).
//   - Every path HAProxy reads or writes (inventory/table.go: directive
//     and option arguments, map and jwt_verify converter arguments, ACL -f
//     files, action and reply files, unix socket addresses) must lie inside
//     the bundle once relative paths are resolved as HAProxy does (from the
//     directory HAProxy is in, which default-path and SPOE files move, and
//     from the last one for late expressions: cwd.go; ca-base, crt-base,
//     key-base, server-state-base, unix-bind prefix) and cleaned, without
//     going out of the bundle on the way. /dev/null is accepted for reads, never
//     for writes; a write may not replace a bundle file. A path under an
//     allowed "path:<dir>" entry is accepted.
//   - Files HAProxy parses for the configuration (crt-lists, SPOE
//     configurations) are scanned with the same rules, and every line of
//     the map and pattern files is checked against HAProxy's reader
//     (mapcheck.go).
//   - Bundle file names must be local, clean, slash-separated paths.
//
// A reason names the file and line, repeats at most a short prefix of
// user text and never an absolute bundle path.
func Check(b *bundle.Bundle, allowed []string) error {
	_, err := Evaluate(b, allowed, "")
	return err
}

// CheckVersion is Check for a checker whose HAProxy has the given version
// (as `haproxy -v` prints it): the conditions version_atleast() and
// version_before() are evaluated against it. Check, which knows no
// version, denies them.
func CheckVersion(b *bundle.Bundle, allowed []string, version string) error {
	_, err := Evaluate(b, allowed, version)
	return err
}

// Report is what a scan learned besides its findings, for the checker.
type Report struct {
	// LooseMaps are the bundle maps (by name) whose content cannot change
	// what haproxy -c says: every reference to them is a plain-string map
	// converter. Nil when the bundle may run code (code can read any file).
	LooseMaps map[string]bool
	// AloneMaps are the bundle maps (by name) that a stub configuration
	// loading only them judges as haproxy -c of the whole bundle would,
	// with the converter that reads them (map_reg or map_regm): every
	// reference to one is that converter (see aloneMaps). Nil when the
	// bundle may run code.
	AloneMaps map[string]string
	// NeedsVersion reports that a condition was denied for want of the
	// HAProxy version: CheckVersion with it may pass.
	NeedsVersion bool
}

// Evaluate is CheckVersion, also returning the Report.
func Evaluate(b *bundle.Bundle, allowed []string, version string) (Report, error) {
	s, err := checkPolicy(b, allowed, version)
	return s.report(), err
}

// checkPolicy is Evaluate, returning the scan.
func checkPolicy(b *bundle.Bundle, allowed []string, version string) (*policyScan, error) {
	s := scanButMaps(b, allowed, version)
	return s, s.finish()
}

// scanButMaps is the scan of everything but the lines of the maps (see
// Scans): the one part of it that reads the maps' content, checkMapFiles,
// is left to finish.
func scanButMaps(b *bundle.Bundle, allowed []string, version string) *policyScan {
	s := newPolicyScan(b, allowed)
	s.version = version
	s.checkNames(b)
	s.scanConfig(b.Config)
	final := s.cwd.dirs
	s.scanPending()
	s.recheckDeferred(final)
	return s
}

// finish checks the maps' lines and returns the scan's findings: nil or
// an *Error.
func (s *policyScan) finish() error {
	s.checkMapFiles()
	if len(s.findings) == 0 {
		return nil
	}
	if s.dropped > 0 {
		s.findings = append(s.findings, Finding{Message: fmt.Sprintf("and up to %d more findings", s.dropped)})
	}
	return &Error{Findings: s.findings}
}

// report is what the scan learned besides its findings.
func (s *policyScan) report() Report {
	return Report{LooseMaps: s.looseMaps(), AloneMaps: s.aloneMaps(), NeedsVersion: s.needVersion}
}

// newPolicyScan prepares a scan of b.
func newPolicyScan(b *bundle.Bundle, allowed []string) *policyScan {
	base := filepath.Clean(b.BaseDir)
	s := &policyScan{
		baseDir:   base,
		allowed:   make(map[string]bool, len(allowed)),
		files:     make(map[string]string),
		dirs:      map[string]bool{base: true},
		seen:      make(map[Finding]bool),
		mapUse:    make(map[string]*mapfile.Use),
		refs:      make(map[string]int),
		looseRefs: make(map[string]int),
		alone:     make(map[string]aloneUse),
		scanned:   make(map[string]bool),
		kinds:     make(map[string]bundle.Kind),
		unknown:   make(map[unknownKey]bool),
	}
	s.cwd.dirs = []string{base}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if p, ok := strings.CutPrefix(a, AllowPathPrefix); ok {
			if p = strings.TrimSpace(p); filepath.IsAbs(p) {
				s.paths = append(s.paths, filepath.Clean(p))
			}
			continue
		}
		s.allowed[strings.ToLower(a)] = true
	}
	for _, f := range b.AllFiles() {
		abs := s.abs(f.RelPath)
		s.files[abs] = f.Content
		s.kinds[abs] = f.Kind
		for d := filepath.Dir(abs); len(d) > len(base); d = filepath.Dir(d) {
			s.dirs[d] = true
		}
	}
	return s
}

// abs is the absolute path of the bundle file at rel.
func (s *policyScan) abs(rel string) string {
	return filepath.Join(s.baseDir, filepath.FromSlash(rel))
}

// maxFindings caps the findings of one scan; the reason shows only the
// first few anyway.
const maxFindings = 100

// add records a finding once.
func (s *policyScan) add(at loc, key, msg string) {
	if s.full() {
		return
	}
	f := Finding{File: at.file, Line: at.line, Key: key, Message: s.hideBase(msg)}
	if s.seen[f] {
		return
	}
	s.seen[f] = true
	s.findings = append(s.findings, f)
}

// full reports (and counts) a finding that is not recorded because the
// scan has maxFindings already: callers check it before building a
// message, so that a configuration with a million bad lines costs no more
// than one with a hundred.
func (s *policyScan) full() bool {
	if len(s.findings) < maxFindings {
		return false
	}
	s.dropped++
	return true
}

// refuse records msg under key unless key is allowed.
func (s *policyScan) refuse(at loc, key, msg string) {
	if s.allowed[key] {
		s.granted(at, key)
		return
	}
	s.add(at, key, fmt.Sprintf("%s (add '%s' to spec.allowedDirectives to permit it)", msg, key))
}

// refuseDirective records a refused directive unless it is allowed.
func (s *policyScan) refuseDirective(at loc, key string) {
	if s.allowed[key] {
		s.granted(at, key)
		return
	}
	s.add(at, key, fmt.Sprintf("directive '%s' is not allowed (add it to spec.allowedDirectives to permit it)", key))
}

// granted records a use of an allowed key: where code is loaded or run
// (CodeFingerprint).
func (s *policyScan) granted(at loc, key string) {
	if isCodeKey(key) && !slices.Contains(s.codeAt, at) {
		s.codeAt = append(s.codeAt, at)
	}
}

// refuseEnv records an environment access unless it is allowed.
func (s *policyScan) refuseEnv(at loc) {
	if s.allowed[EnvExpansionKey] {
		return
	}
	s.add(at, EnvExpansionKey, fmt.Sprintf("environment variable expansion is not allowed (add '%s' to spec.allowedDirectives to permit it)", EnvExpansionKey))
}

// envAllowed reports whether environment access is permitted.
func (s *policyScan) envAllowed() bool { return s.allowed[EnvExpansionKey] }

// checkNames refuses bundle file names that could escape the bundle.
func (s *policyScan) checkNames(b *bundle.Bundle) {
	for _, f := range b.AllFiles()[1:] {
		if err := bundle.CheckName(f.Name); err != nil {
			s.add(loc{file: string(f.Kind) + ":" + shortText(f.Name)}, "", err.Error())
		}
	}
}

// shortText makes user text safe to repeat in a reason: control bytes and
// invalid UTF-8 escaped, at most maxShown bytes kept.
func shortText(v string) string {
	var b strings.Builder
	for i, r := range v {
		if b.Len() >= maxShown {
			b.WriteString("…")
			break
		}
		switch {
		case r == 0xFFFD && !strings.HasPrefix(v[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", v[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// short is user text for a reason: the bundle directory (a temporary
// path) reads "<bundle>", then shortText applies.
func (s *policyScan) short(v string) string {
	return shortText(s.hideBase(v))
}

// hideBase replaces every occurrence of the bundle directory in v.
func (s *policyScan) hideBase(v string) string {
	if s.baseDir == "" || s.baseDir == "/" || !strings.Contains(v, s.baseDir) {
		return v
	}
	return strings.ReplaceAll(v, s.baseDir, "<bundle>")
}

// showPath is a path for a reason (see short).
func (s *policyScan) showPath(p string) string {
	return s.short(p)
}

// DangerousDirectives lists every AllowedDirectives entry the policy
// understands, besides the "path:<dir>" form: the refused directives,
// options and filters, the conditional-block message directives,
// EnvExpansionKey and the address keys.
func DangerousDirectives() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range inventory.Table {
		if e.Key != "" && !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e.Key)
		}
	}
	for _, k := range []string{".diag", ".notice", ".warning", ".alert", EnvExpansionKey, inventory.KeyAbstractSocket, inventory.KeyFD} {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// maxShownPath caps how much of a name the syntax and schema phases repeat.
const maxShownPath = 128

// shorten caps a user-supplied string repeated in a reason (syntax and
// schema phases).
func shorten(s string) string {
	if len(s) <= maxShownPath {
		return s
	}
	return s[:maxShownPath] + "…"
}
