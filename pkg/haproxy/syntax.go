package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	parser "github.com/haproxytech/config-parser/v5"
	parsererrors "github.com/haproxytech/config-parser/v5/errors"
	"github.com/haproxytech/config-parser/v5/options"
	"github.com/haproxytech/config-parser/v5/types"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// configParserSlot serialises config-parser runs. config-parser v5.1.4
// writes its exported package variable parser.DefaultSectionName on every
// "defaults" line, so two concurrent parses race. This slot guards that
// third-party global; it is the package's only shared state and it never
// covers an haproxy process. It is a channel rather than a mutex so that a
// check waiting for it gives up when its context ends.
var configParserSlot = make(chan struct{}, 1)

// parseConfig runs config-parser over cfg. It stops soon after ctx ends
// (config-parser reads its input as it parses, a few KiB at a time, from a
// reader that fails once ctx is done) and then returns ctx's error. A
// panic inside config-parser is returned as an error rather than taking
// the controller down.
func parseConfig(ctx context.Context, cfg string) (p parser.Parser, err error) {
	select {
	case configParserSlot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-configParserSlot }()
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("config-parser failed: %v", r)
		}
	}()
	in := &ctxReader{ctx: ctx, r: strings.NewReader(cfg)}
	p, err = parser.New(options.Reader(in), options.UseListenSectionParsers)
	if err != nil {
		return nil, fmt.Errorf("config-parser: %w", err)
	}
	if in.err != nil {
		return nil, in.err // config-parser ignores read errors: the parse was cut short
	}
	return p, nil
}

// ctxReader reads from r until ctx ends, then fails with ctx's error and
// records it.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

// Read reads from r unless ctx has ended.
func (c *ctxReader) Read(p []byte) (int, error) {
	select {
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		return 0, c.err
	default:
		return c.r.Read(p)
	}
}

// parsedSections is the section types the syntax and schema phases visit.
func parsedSections() []parser.Section {
	return []parser.Section{
		parser.Comments, parser.Global, parser.Defaults, parser.Frontends,
		parser.Backends, parser.Listen, parser.Resolvers, parser.UserList,
		parser.Peers, parser.Mailers, parser.Cache, parser.Program,
		parser.HTTPErrors, parser.Ring, parser.LogForward, parser.FCGIApp,
	}
}

// ctxDone returns ctx's error once it has ended, without taking a lock.
func ctxDone(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// checkSyntax parses cfg and reports the lines config-parser could not
// process. A line is a syntax error when config-parser has a parser for its
// keyword but rejected the line, or when neither config-parser nor HAProxy
// 2.6 knows its first word. Lines whose keyword config-parser does not model
// but HAProxy accepts (e.g. "capture request header", or "option" names it
// does not know) are left to `haproxy -c`, as are conditional-block
// directives (".if", ".notice", ...), so that valid configurations are not
// refused here merely because config-parser lags behind HAProxy. ctx is
// checked while parsing and before each section.
func checkSyntax(ctx context.Context, cfg string) (parser.Parser, *configIndex, error) {
	p, err := parseConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	idx := indexConfig(cfg)
	var findings []Finding
	used := lineCursor{}
	for _, sec := range parsedSections() {
		names, err := p.SectionsGet(sec)
		if err != nil {
			continue
		}
		sort.Strings(names)
		for _, name := range names {
			if err := ctxDone(ctx); err != nil {
				return nil, nil, err
			}
			fs, err := syntaxSection(p, idx, sec, name, used)
			if err != nil {
				return nil, nil, err
			}
			findings = append(findings, fs...)
		}
	}
	if len(findings) == 0 {
		return p, idx, nil
	}
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].Line < findings[j].Line })
	return p, idx, &SyntaxError{Findings: findings}
}

// syntaxSection reports the syntax findings of one section, in the order
// config-parser lists its unprocessed lines. used records the lines already
// attributed in this pass (lines of one section only ever match inside its
// span).
func syntaxSection(p parser.Parser, idx *configIndex, sec parser.Section, name string, used lineCursor) ([]Finding, error) {
	data, err := p.Get(sec, name, "")
	if err != nil {
		if errors.Is(err, parsererrors.ErrFetch) {
			return nil, nil
		}
		return nil, fmt.Errorf("config-parser: %s %s: %w", sec, name, err)
	}
	lines, _ := data.([]types.UnProcessed)
	span := idx.section(string(sec), name)
	var findings []Finding
	for _, u := range lines {
		msg, bad := judgeUnprocessed(p, sec, u.Value)
		n := idx.lineOf(span, u.Value, used)
		if bad {
			findings = append(findings, Finding{File: bundle.ConfigFileName, Line: n, Message: msg})
		}
	}
	return findings, nil
}

// judgeUnprocessed decides whether an unprocessed line is a syntax error and
// describes it. Only keywords are repeated, never argument values.
func judgeUnprocessed(p parser.Parser, sec parser.Section, line string) (string, bool) {
	words := policy.Words(line)
	if len(words) == 0 || strings.HasPrefix(words[0], ".") {
		return "", false
	}
	kw := words
	if kw[0] == "no" && len(kw) > 1 {
		kw = kw[1:]
	}
	for i := min(len(kw), 4); i >= 1; i-- {
		name := strings.Join(kw[:i], " ")
		if p.HasParser(sec, name) {
			return fmt.Sprintf("invalid arguments to '%s'", policy.Shorten(name)), true
		}
	}
	if policy.IsKeyword(words[0]) {
		return "", false
	}
	where := string(sec)
	if sec == parser.Comments {
		return fmt.Sprintf("unknown keyword '%s' out of section", policy.Shorten(words[0])), true
	}
	return fmt.Sprintf("unknown keyword '%s' in '%s' section", policy.Shorten(words[0]), where), true
}
