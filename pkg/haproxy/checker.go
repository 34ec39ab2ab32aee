package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	parser "github.com/haproxytech/config-parser/v5"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// DefaultTimeout bounds one `haproxy -c` run when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Options configure a Checker.
type Options struct {
	// HAProxyPath is the haproxy binary; a bare name is looked up in PATH
	// once, by NewChecker. Default "haproxy".
	HAProxyPath string
	// Timeout bounds each `haproxy -c` run (not the wait for a free slot).
	// Default DefaultTimeout.
	Timeout time.Duration
	// MaxParallel bounds how many haproxy processes run at once across all
	// Checks of this Checker. Default runtime.GOMAXPROCS(0): the CPUs the
	// process may use (Go derives it from the container's CPU limit; each
	// run of a large configuration holds its own memory, about 200 MB at
	// 10,000 backends, in the same container).
	MaxParallel int
	// SkipSyntax skips the config-parser phase (benchmarks, operations).
	SkipSyntax bool
	// SkipSchema skips the client-native models phase.
	SkipSchema bool
	// AllowedDirectives permits otherwise refused directives, environment
	// expansion (policy.EnvExpansionKey) and paths outside the bundle
	// (policy.AllowPathPrefix entries); see policy.Check.
	AllowedDirectives []string
	// TempDir is the parent of the per-check workspaces ("" means
	// os.TempDir()).
	TempDir string
	// ParseCacheEntries bounds the per-section cache of syntax and schema
	// findings (see Checker.ParseCacheStats): an admission changes a few
	// sections out of thousands, and only sections whose text (in context)
	// is not cached are parsed, a chunk of sections at a time. Default
	// DefaultParseCacheEntries; negative disables the cache (and the
	// per-section path: configurations are parsed whole, up to 1 MiB), and
	// with it the outcomes kept by haproxy.cfg's text (parsedConfigs) and
	// the kept policy scans (policy.Scans): every check is then computed
	// in full.
	ParseCacheEntries int
	// Shortcuts, when its map-only shortcut is off, makes every Check run
	// haproxy -c (see passedRuns); nil keeps the shortcut on.
	Shortcuts *shortcut.Switches
}

// Overruled is a syntax or schema finding that haproxy -c did not confirm.
type Overruled struct {
	// Phase is phase.Syntax or phase.Schema.
	Phase phase.Phase
	// Reason is the finding's simplified reason.
	Reason string
}

// Result is the outcome of a Check.
type Result struct {
	// Warnings are the simplified warnings of a passing `haproxy -c`, and
	// the syntax and schema findings it did not confirm.
	Warnings []string
	// Overruled are the syntax and schema findings haproxy -c did not
	// confirm (the check passed; each is also a warning).
	Overruled []Overruled
	// SemanticReused reports that haproxy -c did not run on the bundle:
	// it differs from one it accepted only in maps it reads as plain
	// strings (string keys and values), whose content it accepts whatever
	// it is, and in maps it accepted alone (MapsCheckedAlone), or (with no
	// warning) only in backend sections it accepted alone
	// (SectionsCheckedAlone) and maybe such maps, which the same stub
	// loaded (both counts then). Warnings are that run's.
	SemanticReused bool
	// MapsCheckedAlone is how many maps haproxy -c accepted in a stub
	// configuration instead (see Checker.acceptedAlone, and
	// Checker.acceptedAdded for a stub of both); 0 when none.
	MapsCheckedAlone int
	// SectionsCheckedAlone is how many added backend sections haproxy -c
	// accepted in a stub configuration instead (see
	// Checker.acceptedAdded), in this one or, of the same shape, in an
	// earlier one (shapes.go); 0 when none.
	SectionsCheckedAlone int
	// SectionsShapeKnown reports that no stub ran for SectionsCheckedAlone:
	// haproxy -c had accepted a stub of the same shape (shapes.go), for an
	// earlier proposal or ahead of time (Checker.LearnShapes).
	SectionsShapeKnown bool
	// Durations holds how long each phase that ran took.
	Durations map[phase.Phase]time.Duration
}

// Checker validates rendered bundles. It is safe for concurrent use.
type Checker struct {
	tempDir     string
	haproxyPath string
	timeout     time.Duration
	sem         chan struct{}
	skipSyntax  bool
	skipSchema  bool
	allowed     []string
	cache       *parseCache        // nil when disabled
	parsed      *parsedConfigs     // parse phase outcomes by haproxy.cfg; nil when cache is
	scans       *policy.Scans      // policy scans before the map check; nil when cache is
	passed      *passedRuns        // bundles haproxy -c accepted (see passedRuns); nil: none reused
	added       *addedRuns         // their haproxy.cfg, for added backend sections (added.go); nil: none
	fixtures    bool               // records no base in added (ForFixtures)
	shortcuts   *shortcut.Switches // its MapOnly off: passed is not used
	version     *knownVersion      // its HAProxy's version, once a policy check needed it
	chunkBytes  int                // maxChunkBytes; smaller in tests
	// active counts the Checks in progress, shared with the checkers
	// Allowing derives (see Wait).
	active *sync.WaitGroup
}

// Wait blocks until every Check of this checker (and of those Allowing
// derived from it) has returned: after their contexts ended, once their
// haproxy process groups are killed and their workspaces removed. A
// command that stops on a signal waits for it before it exits, so that
// nothing it started outlives it.
func (c *Checker) Wait() { c.active.Wait() }

// NewChecker resolves the haproxy binary and applies defaults.
func NewChecker(opts Options) (*Checker, error) {
	bin := opts.HAProxyPath
	if bin == "" {
		bin = "haproxy"
	}
	resolved, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("haproxy binary %q: %w", bin, err)
	}
	if resolved, err = filepath.Abs(resolved); err != nil {
		return nil, fmt.Errorf("haproxy binary %q: %w", bin, err)
	}
	parent := opts.TempDir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := NameableDir(parent); err != nil {
		return nil, fmt.Errorf("the checker's temporary directory (TMPDIR): %w", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	par := opts.MaxParallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var (
		cache  *parseCache
		parsed *parsedConfigs
		scans  *policy.Scans
	)
	switch n := opts.ParseCacheEntries; {
	case n == 0:
		cache = newParseCache(DefaultParseCacheEntries)
	case n > 0:
		cache = newParseCache(n)
	}
	if cache != nil {
		parsed, scans = newParsedConfigs(defaultParsedConfigs), policy.NewScans(0)
	}
	return &Checker{
		tempDir:     opts.TempDir,
		active:      &sync.WaitGroup{},
		cache:       cache,
		parsed:      parsed,
		scans:       scans,
		passed:      newPassedRuns(DefaultPassedEntries),
		added:       newAddedRuns(),
		version:     &knownVersion{},
		shortcuts:   opts.Shortcuts,
		haproxyPath: resolved,
		timeout:     timeout,
		sem:         make(chan struct{}, par),
		skipSyntax:  opts.SkipSyntax,
		skipSchema:  opts.SkipSchema,
		allowed:     append([]string(nil), opts.AllowedDirectives...),
		chunkBytes:  maxChunkBytes,
	}, nil
}

// Allowing returns a Checker that applies the policy with allowed instead
// of the Options' AllowedDirectives, and shares everything else with c: the
// bound on parallel haproxy runs (MaxParallel holds across both) and the
// parse cache.
func (c *Checker) Allowing(allowed []string) *Checker {
	out := *c
	out.allowed = append([]string(nil), allowed...)
	return &out
}

// WithShortcuts returns a Checker that shares everything with c and
// consults s instead of Options.Shortcuts.
func (c *Checker) WithShortcuts(s *shortcut.Switches) *Checker {
	out := *c
	out.shortcuts = s
	return &out
}

// Unreused returns a Checker that shares everything with c but the
// accepted runs: its Checks always run haproxy -c, and record nothing for
// c's to reuse. The controller's shadow check of the map-only shortcut
// (package shadow) checks with it.
func (c *Checker) Unreused() *Checker {
	out := *c
	out.passed, out.added = nil, nil
	return &out
}

// ForFixtures returns a Checker that shares everything with c, accepted
// runs included, but records none of its own as a base for added backend
// sections (addedRuns). The embedded validation tests check with it: their
// fixtures' bundles are never what an admission adds a backend to, and
// addedRuns keeps few keys (addedKeys), so their runs would push out the
// live configuration's, and the next CREATE adding a backend would run
// haproxy -c on the whole bundle. Not recording them is simpler than
// pinning the live one (the checker does not know which bundle is live).
func (c *Checker) ForFixtures() *Checker {
	out := *c
	out.fixtures = true
	return &out
}

// HAProxyPath is the absolute path of the haproxy binary the Checker runs.
func (c *Checker) HAProxyPath() string { return c.haproxyPath }

// Check runs the policy, syntax, schema and semantic phases on b and
// reports the first that fails, in that order. Policy runs first and alone,
// on b as rendered: b.BaseDir is the directory HAProxy reads the bundle from
// (pathFor's base), which need not exist here. After the policy passed, the
// bundle is written into a fresh private workspace, relocated there
// (bundle.Bundle.Relocated: every path under b.BaseDir points into the
// workspace), and `haproxy -c` runs on that copy concurrently with the
// syntax and schema parsing of b's own text, and is stopped when one of
// them fails. Because b's text does not depend on the workspace, equal
// bundles parse (and hash) alike from one check to the next.
//
// A failing phase returns a *phase.Error whose Phase is that phase, whose
// Reason is the simplified message, and which wraps a *policy.Error,
// *SyntaxError, *SchemaError or *SemanticError. A `haproxy -c` that exceeds
// the timeout or the context fails the semantic phase with an error for
// which errors.Is(err, context.DeadlineExceeded) (or context.Canceled)
// holds. Other errors (an unwritable workspace, haproxy that cannot be
// started) are returned as plain errors: they are the checker's fault, not
// the configuration's. The Result is returned in every case, with the
// durations of the phases that ran.
func (c *Checker) Check(ctx context.Context, b *bundle.Bundle) (*Result, error) {
	c.active.Add(1)
	defer c.active.Done()
	res := &Result{Durations: make(map[phase.Phase]time.Duration)}
	if b == nil {
		return res, errors.New("check: nil bundle")
	}
	if !filepath.IsAbs(b.BaseDir) {
		return res, fmt.Errorf("check: bundle base directory %q is not absolute", b.BaseDir)
	}

	start := time.Now()
	scan, err := c.checkPolicy(ctx, b)
	res.Durations[phase.Policy] = time.Since(start)
	if err != nil {
		return res, phaseError(phase.Policy, err)
	}
	mapOnly := c.shortcuts.On(shortcut.MapOnly) && c.passed != nil
	key, keyAlone := "", "" // "": neither reused nor recorded
	if mapOnly {
		key = semanticKey(b, scan.LooseMaps)
	}
	warnings, ok := c.passed.get(key)
	if !ok && mapOnly {
		keyAlone = aloneKey(b, scan.LooseMaps, scan.AloneMaps)
		if warnings, ok = c.acceptedAlone(ctx, b, scan.AloneMaps, keyAlone, res); ok {
			c.passed.add(key, warnings)
		}
	}
	var added addedProbe // "" key: neither reused nor recorded
	if !ok && mapOnly && c.added != nil {
		if added = probeAdded(b, scan.LooseMaps, scan.AloneMaps); c.acceptedAdded(ctx, b, added, res) {
			warnings, ok = nil, true
			c.passed.add(key, warnings)
		}
	}
	if ok {
		res.SemanticReused = true
		parseErr := c.parsePhasesKept(ctx, b, res)
		if parseErr != nil && !isFinding(parseErr) {
			return res, parseErr
		}
		return c.combine(ctx, res, parseErr, warnings, nil)
	}
	ws, err := NewWorkspace(c.tempDir)
	if err != nil {
		return res, fmt.Errorf("check: %w", err)
	}
	defer func() { _ = ws.Remove() }()
	dir := ws.Dir()
	if err := bundle.Write(dir, b.Relocated(dir)); err != nil {
		return res, fmt.Errorf("check: %w", err)
	}

	// haproxy -c runs while the Go-side syntax and schema phases parse the
	// same text: the check costs max(parse, haproxy -c), not their sum. The
	// phases are still reported in order: a syntax or schema failure wins
	// (and stops haproxy) even when haproxy finished first.
	semCtx, stopSemantic := context.WithCancel(ctx)
	defer stopSemantic()
	type semanticResult struct {
		warnings []string
		err      error
		took     time.Duration
	}
	semantic := make(chan semanticResult, 1)
	go func() {
		start := time.Now()
		warnings, _, err := c.runHAProxy(semCtx, dir)
		semantic <- semanticResult{warnings, err, time.Since(start)}
	}()
	parseErr := c.parsePhasesKept(ctx, b, res)
	if parseErr != nil && !isFinding(parseErr) {
		stopSemantic() // the parse phases ran out of time: so does the check
		<-semantic
		return res, parseErr
	}
	sr := <-semantic
	res.Durations[phase.Semantic] += sr.took
	if sr.err == nil {
		c.passed.add(key, sr.warnings)
		c.passed.add(keyAlone, sr.warnings)
		if !c.fixtures {
			c.added.record(added, sr.warnings)
		}
	}
	return c.combine(ctx, res, parseErr, sr.warnings, sr.err)
}

// CheckStatic runs the phases that run nothing: policy, then syntax and
// schema on b's own text. No workspace is written and `haproxy -c` does
// not run, so a syntax or schema finding fails the check (there is no
// haproxy -c to confirm or overrule it). Admission uses it for a bundle
// that loads code the running configuration does not (see
// policy.CodeFingerprint): no admission runs code a request brought.
func (c *Checker) CheckStatic(ctx context.Context, b *bundle.Bundle) (*Result, error) {
	c.active.Add(1)
	defer c.active.Done()
	res := &Result{Durations: make(map[phase.Phase]time.Duration)}
	if b == nil {
		return res, errors.New("check: nil bundle")
	}
	start := time.Now()
	_, err := c.checkPolicy(ctx, b)
	res.Durations[phase.Policy] = time.Since(start)
	if err != nil {
		return res, phaseError(phase.Policy, err)
	}
	return res, c.parsePhasesKept(ctx, b, res)
}

// combine decides a check from the parse phases' finding (nil when they
// passed) and the haproxy -c outcome. The syntax and schema phases exist to
// give earlier, clearer reasons for what haproxy -c refuses, never to
// refuse more: their finding fails the check only when haproxy -c fails on
// the same bundle too, and is the reason only when it points at a line
// haproxy -c refused (else haproxy's message is); when haproxy -c accepts
// the bundle, the finding becomes a warning and is listed in
// Result.Overruled.
func (c *Checker) combine(ctx context.Context, res *Result, parseErr error, warnings []string, err error) (*Result, error) {
	if err != nil {
		se, ok := errors.AsType[*SemanticError](err)
		switch {
		case !ok:
			return res, err
		case parseErr != nil && se.Err == nil && sameLines(parseErr, se):
			return res, parseErr
		}
		return res, &phase.Error{Phase: phase.Semantic, Reason: c.semanticReason(ctx, se), Err: se}
	}
	res.Warnings = warnings
	if pe, ok := errors.AsType[*phase.Error](parseErr); ok {
		res.Overruled = append(res.Overruled, Overruled{Phase: pe.Phase, Reason: pe.Reason})
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s check: %s (haproxy -c accepts it)", pe.Phase, pe.Reason))
	}
	return res, nil
}

// sameLines reports whether a syntax or schema finding points at a line of
// haproxy.cfg that haproxy -c refused.
func sameLines(parseErr error, se *SemanticError) bool {
	var fs []Finding
	if e, ok := errors.AsType[*SyntaxError](parseErr); ok {
		fs = e.Findings
	} else if e, ok := errors.AsType[*SchemaError](parseErr); ok {
		fs = e.Findings
	}
	for _, f := range fs {
		prefix := fmt.Sprintf("%s:%d:", f.File, f.Line)
		for _, m := range se.Messages {
			if f.Line > 0 && strings.HasPrefix(m, prefix) {
				return true
			}
		}
	}
	return false
}

// isFinding reports whether err is a syntax or schema finding about the
// configuration (not a deadline or cancellation).
func isFinding(err error) bool {
	pe, ok := errors.AsType[*phase.Error](err)
	return ok && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) &&
		(pe.Phase == phase.Syntax || pe.Phase == phase.Schema)
}

// parsePhases runs the syntax and schema phases (unless skipped), recording
// their durations in res; it returns the first failure as a *phase.Error.
//
// The per-section path (parsePhasesCached) handles every configuration it
// can reproduce faithfully; the others, and every configuration when the
// cache is disabled, are parsed whole, up to maxWholeBytes: `haproxy -c`
// alone judges a larger one.
func (c *Checker) parsePhases(ctx context.Context, b *bundle.Bundle, res *Result) error {
	if c.cache != nil && (!c.skipSyntax || !c.skipSchema) {
		if handled, err := c.parsePhasesCached(ctx, b, res); handled {
			return err
		}
		delete(res.Durations, phase.Syntax)
		delete(res.Durations, phase.Schema)
	}
	if len(b.Config) > maxWholeBytes {
		return nil
	}
	var err error
	var (
		p   parser.Parser
		idx *configIndex
	)
	if !c.skipSyntax {
		if err := ctx.Err(); err != nil {
			return phaseError(phase.Syntax, err)
		}
		start := time.Now()
		p, idx, err = checkSyntax(ctx, b.Config)
		res.Durations[phase.Syntax] = time.Since(start)
		if err != nil {
			return phaseError(phase.Syntax, err)
		}
	}
	if !c.skipSchema {
		if err := ctx.Err(); err != nil {
			return phaseError(phase.Schema, err)
		}
		start := time.Now()
		if p == nil {
			if p, err = parseConfig(ctx, b.Config); err != nil {
				res.Durations[phase.Schema] = time.Since(start)
				return phaseError(phase.Schema, err)
			}
			idx = indexConfig(b.Config)
		}
		err = checkSchema(ctx, p, idx)
		res.Durations[phase.Schema] = time.Since(start)
		if err != nil {
			return phaseError(phase.Schema, err)
		}
	}

	return nil
}

// phaseError wraps err as a failure of ph with a capped reason.
func phaseError(ph phase.Phase, err error) *phase.Error {
	reason := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("%s check timed out", ph)
	case errors.Is(err, context.Canceled):
		reason = fmt.Sprintf("%s check canceled", ph)
	}
	return &phase.Error{Phase: ph, Reason: capReason(reason), Err: err}
}

// semanticReason is the admission reason for a failed haproxy run.
func (c *Checker) semanticReason(ctx context.Context, se *SemanticError) string {
	switch {
	case errors.As(se.Err, new(*slotWaitError)):
		if errors.Is(se.Err, context.Canceled) {
			return "haproxy -c canceled while waiting for a free checker slot"
		}
		return "haproxy -c timed out waiting for a free checker slot"
	case errors.Is(se.Err, context.Canceled):
		return "haproxy -c canceled"
	case errors.Is(se.Err, context.DeadlineExceeded):
		if ctx.Err() != nil {
			return "haproxy -c timed out (request deadline exceeded)"
		}
		return fmt.Sprintf("haproxy -c timed out after %s", c.timeout)
	}
	return capReason(se.Error())
}
