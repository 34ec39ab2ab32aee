package haproxy

import "strings"

// This file mirrors how HAProxy 3.0 reads its configuration: readcfgfile()
// in src/cfgparse.c cuts the text into lines and parse_line() in
// src/tools.c cuts one line into words. The policy must see the words
// HAProxy will see, so every rule below is HAProxy's, verified against
// haproxy 3.0.11 (see tokenize_test.go):
//
//   - Lines end at '\n' (fgets; no length limit, no continuation). Leading
//     C isspace() characters (' ', \t, \v, \f, \r) are skipped. A line whose
//     first other character is '[' is a scope declaration, never tokenized.
//   - A word ends at unquoted, unescaped isspace(); a run of them is one
//     separator, and a '\r' inside that run does not end the line. The line
//     ends at NUL, '\n' or a '\r' met anywhere else, and at '#' outside
//     quotes.
//   - '"' and '\'' toggle quoting (each only outside the other); quotes are
//     removed and adjacent pieces concatenated.
//   - Backslash, outside single quotes: \\ and "\ " give the character,
//     \t \n \r control characters, \xHH a byte (two hex digits required:
//     else the line is rejected), \# a '#', \' and \" the quote, \$ a '$'
//     only inside double quotes; any other backslash stays as it is.
//   - Inside double quotes only, '$' starts an environment expansion:
//     $NAME or ${NAME}, NAME = [A-Za-z_][A-Za-z0-9_]* or the pseudo
//     variables .LINE .FILE .SECTION; ${NAME-default} takes the raw text up
//     to '}' when NAME is unset; ${NAME[*]} splits the value into words at
//     spaces. An unset $NAME directly followed by '"' makes HAProxy drop
//     that quote and the spaces after it, gluing the next word to this one.
//   - A NUL produced by \x00 ends the word as a C string.
//   - At most 64 words; more and the line is rejected.

// maxLineWords is MAX_LINE_ARGS of HAProxy 3.0 (include/haproxy/defaults.h).
const maxLineWords = 64

// envMode says how tokenizeLine treats environment expansions, whose values
// the policy cannot know.
type envMode uint8

const (
	// envLiteral keeps an expansion's text ("$NAME", "${NAME}") in the word,
	// for callers that only need keywords and section names.
	envLiteral envMode = iota
	// envChecker behaves as HAProxy under the checker's scrubbed environment:
	// the variables HAProxy or the checker set (checkerSetVars) and the
	// pseudo variables expand to an unknown value, every other variable is
	// unset, with HAProxy's quote-dropping quirk.
	envChecker
	// envAllSet expands every variable to an unknown, non-empty value.
	envAllSet
	// envExact expands variables from tokenizer.env exactly as HAProxy
	// would (tests compare it with haproxy itself).
	envExact
)

// parseErr is a reason HAProxy rejects a line without executing it.
type parseErr uint8

const (
	errNone parseErr = iota
	errQuote
	errBrace
	errVarName
	errHex
	errWordExpand
	errTooMany
)

// cfgWord is one word of a configuration line.
type cfgWord struct {
	// text is the decoded word, cut at its first NUL byte. An expansion
	// whose value is unknown stands as a single '$'.
	text string
	// env is true when an environment expansion contributed to the word.
	env bool
}

// expansion is one environment expansion found on a line.
type expansion struct {
	// name is the variable name (".FILE" for a pseudo variable).
	name string
	// list is true for the ${NAME[*]} word-splitting form.
	list bool
	// glued is true when, under envChecker, the variable is unset and
	// HAProxy dropped the closing quote and the spaces after it, so that
	// the next word was glued to this one.
	glued bool
}

// maxKeptExpansions bounds the expansions a lineTokens keeps (a line may
// hold millions); one of each special kind (leaking name, list, glued) is
// always kept.
const maxKeptExpansions = 64

// lineTokens is one configuration line cut into words.
type lineTokens struct {
	words []cfgWord
	// exps are the line's first expansions and the first of each special
	// kind; nexp counts them all.
	exps []expansion
	nexp int
	kept [3]bool // a leaking, a list and a glued expansion are in exps
	// err is why HAProxy rejects the line, errNone when it accepts it.
	err parseErr
	// rest is what follows a NUL or '\r' that ended the line: HAProxy
	// ignores it, the policy scans it too.
	rest string
	// scope is true for a "[name]" scope declaration line.
	scope bool
}

// leakingVars hold a host name or a path while `haproxy -c` runs; no grant
// lets a configuration expand them into a message.
var leakingVars = map[string]bool{".FILE": true, "HAPROXY_LOCALPEER": true, "HAPROXY_CFGFILES": true}

// checkerSetVars are the environment variables set while `haproxy -c`
// parses: the checker's own (see checkerEnv) and those HAProxy 3.0 sets
// before or while parsing (src/haproxy.c, src/cfgparse-global.c,
// src/errors.c).
var checkerSetVars = map[string]bool{
	"PATH": true, "HAPROXY_LOCALPEER": true, "HAPROXY_STARTUP_VERSION": true,
	"HAPROXY_HTTP_LOG_FMT": true, "HAPROXY_HTTPS_LOG_FMT": true,
	"HAPROXY_TCP_LOG_FMT": true, "HAPROXY_BRANCH": true,
	"HAPROXY_STARTUPLOGS_FD": true, "HAPROXY_CFGFILES": true,
	"HAPROXY_MWORKER": true, "HAPROXY_MWORKER_REEXEC": true,
	"HAPROXY_MWORKER_WAIT_ONLY": true, "HAPROXY_LOAD_SUCCESS": true,
}

// isCSpace is C isspace() in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// isAlpha is C isalpha() in the C locale.
func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// isAlnum is C isalnum() in the C locale.
func isAlnum(c byte) bool { return isAlpha(c) || (c >= '0' && c <= '9') }

// unhex decodes one hexadecimal digit.
func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// tokenizer is the state of one parse_line run.
type tokenizer struct {
	s      string
	i      int
	mode   envMode
	out    lineTokens
	cur    []byte
	curEnv bool
	squote bool
	dquote bool
	env    map[string]string // envExact only
	// mixed is true when the current word is not a plain substring of the
	// line starting at wstart (an escape, an expansion or a quote broke
	// it); a plain word is taken from the line without a copy.
	mixed  bool
	wstart int
}

// tokenizeLine cuts one physical line (without its '\n') into words as
// HAProxy 3.0 does.
func tokenizeLine(line string, mode envMode) lineTokens {
	return tokenizeLineEnv(line, mode, nil)
}

// tokenizeLineEnv is tokenizeLine with the environment env for envExact.
func tokenizeLineEnv(line string, mode envMode, env map[string]string) lineTokens {
	t := &tokenizer{s: line, mode: mode, env: env}
	for t.i < len(line) && isCSpace(line[t.i]) {
		t.i++
	}
	if t.i < len(line) && line[t.i] == '[' {
		t.out.scope = true
		t.out.rest = line[t.i:]
		return t.out
	}
	t.run()
	return t.out
}

// run is the main loop of parse_line.
func (t *tokenizer) run() {
	for t.i < len(t.s) && t.out.err == errNone {
		c := t.s[t.i]
		switch {
		case c == 0 || c == '\n' || c == '\r':
			t.out.rest = t.s[t.i+1:]
			t.finish()
			return
		case c == '#' && !t.squote && !t.dquote:
			t.finish()
			return
		case c == '"' && !t.squote:
			t.dquote = !t.dquote
			t.i++
		case c == '\'' && !t.dquote:
			t.squote = !t.squote
			t.i++
		case c == '\\' && !t.squote:
			t.escape()
		case isCSpace(c) && !t.squote && !t.dquote:
			for t.i < len(t.s) && isCSpace(t.s[t.i]) {
				t.i++
			}
			t.endWord()
		case c == '$' && t.dquote:
			t.expand()
		default:
			if len(t.cur) == 0 {
				t.wstart = t.i
			} else if t.wstart+len(t.cur) != t.i {
				t.mixed = true
			}
			t.cur = append(t.cur, c)
			t.i++
		}
	}
	t.finish()
}

// escape handles a backslash outside single quotes.
func (t *tokenizer) escape() {
	var next byte
	if t.i+1 < len(t.s) {
		next = t.s[t.i+1]
	}
	send, skip := byte('\\'), 1
	switch next {
	case ' ', '\\', '#', '\'', '"':
		send, skip = next, 2
	case 't':
		send, skip = '\t', 2
	case 'n':
		send, skip = '\n', 2
	case 'r':
		send, skip = '\r', 2
	case '$':
		if t.dquote {
			send, skip = '$', 2
		}
	case 'x':
		var hi, lo byte
		ok := t.i+3 < len(t.s)
		if ok {
			var ok1, ok2 bool
			hi, ok1 = unhex(t.s[t.i+2])
			lo, ok2 = unhex(t.s[t.i+3])
			ok = ok1 && ok2
		}
		if !ok {
			t.out.err = errHex
			return
		}
		send, skip = hi<<4|lo, 4
	}
	t.cur = append(t.cur, send)
	t.mixed = true
	t.i += skip
}

// endWord closes the current word at a separator.
func (t *tokenizer) endWord() {
	t.push()
	if len(t.out.words) >= maxLineWords {
		t.out.err = errTooMany
	}
}

// push appends the current word, even when empty.
func (t *tokenizer) push() {
	var text string
	if !t.mixed {
		text = t.s[t.wstart : t.wstart+len(t.cur)]
	} else {
		w := t.cur
		for i, c := range w {
			if c == 0 {
				w = w[:i]
				break
			}
		}
		text = string(w)
	}
	t.out.words = append(t.out.words, cfgWord{text: text, env: t.curEnv})
	t.cur = t.cur[:0]
	t.curEnv = false
	t.mixed = false
}

// finish ends the line: the last word counts only when it has characters,
// and an open quote rejects the line.
func (t *tokenizer) finish() {
	if len(t.cur) > 0 {
		t.push()
	}
	if t.out.err == errNone && (t.squote || t.dquote) {
		t.out.err = errQuote
	}
}

// expand handles '$' inside double quotes (t.s[t.i] == '$').
func (t *tokenizer) expand() {
	start := t.i
	t.i++
	brace := t.i < len(t.s) && t.s[t.i] == '{'
	if brace {
		t.i++
	}
	if t.i >= len(t.s) || !(isAlpha(t.s[t.i]) || t.s[t.i] == '_' || t.s[t.i] == '.') {
		t.out.err = errVarName
		return
	}
	nameStart := t.i
	if t.s[t.i] == '.' {
		t.i++
	}
	for t.i < len(t.s) && (isAlnum(t.s[t.i]) || t.s[t.i] == '_') {
		t.i++
	}
	exp := expansion{name: t.s[nameStart:t.i]}
	pseudo := exp.name[0] == '.'
	if pseudo && exp.name != ".LINE" && exp.name != ".FILE" && exp.name != ".SECTION" {
		t.out.err = errVarName
		return
	}
	if brace && t.i < len(t.s) && t.s[t.i] == '[' {
		if t.i+2 >= len(t.s) || t.s[t.i+1] != '*' || t.s[t.i+2] != ']' {
			t.out.err = errWordExpand
			return
		}
		exp.list = true
		t.i += 3
	}
	set := t.varSet(exp.name)
	valueAt := len(t.cur)
	if brace {
		hasDefault, ok := t.closeBrace(set)
		if !ok {
			return
		}
		set = set || hasDefault
	}
	t.curEnv = true
	t.mixed = true
	if set || pseudo {
		t.emitValue(start, exp, valueAt)
	} else if t.i < len(t.s) && t.s[t.i] == '"' {
		// HAProxy drops the quote and the spaces after it, gluing what
		// follows (if anything) to this word.
		t.i++
		for t.i < len(t.s) && isCSpace(t.s[t.i]) {
			t.i++
		}
		t.dquote = false
		exp.glued = t.i < len(t.s) && t.s[t.i] != 0 && t.s[t.i] != '#'
	}
	t.keep(exp)
}

// keep records an expansion within the bounds of maxKeptExpansions.
func (t *tokenizer) keep(e expansion) {
	t.out.nexp++
	kind := -1
	switch {
	case leakingVars[e.name]:
		kind = 0
	case e.list:
		kind = 1
	case e.glued:
		kind = 2
	}
	if len(t.out.exps) < maxKeptExpansions || (kind >= 0 && !t.out.kept[kind]) {
		t.out.exps = append(t.out.exps, e)
		if kind >= 0 {
			t.out.kept[kind] = true
		}
	}
}

// varSet reports whether the variable name is set in the tokenizer's mode.
func (t *tokenizer) varSet(name string) bool {
	switch t.mode {
	case envChecker:
		return checkerSetVars[name]
	case envExact:
		_, ok := t.env[name]
		return ok
	default:
		return true
	}
}

// closeBrace consumes an optional "-default" and the closing brace; under
// envChecker an unset variable takes the default's raw text. hasDefault
// reports a default (HAProxy then never sees the variable as unset); ok is
// false (and the error set) on a missing brace.
func (t *tokenizer) closeBrace(set bool) (hasDefault, ok bool) {
	if t.i < len(t.s) && t.s[t.i] == '-' {
		end := t.i
		for end < len(t.s) && t.s[end] != '}' && t.s[end] != 0 {
			end++
		}
		if end >= len(t.s) || t.s[end] != '}' {
			t.out.err = errBrace
			return false, false
		}
		if !set && (t.mode == envChecker || t.mode == envExact) {
			t.cur = append(t.cur, t.s[t.i+1:end]...)
		}
		t.i = end + 1
		return true, true
	}
	if t.i >= len(t.s) || t.s[t.i] != '}' {
		t.out.err = errBrace
		return false, false
	}
	t.i++
	return false, true
}

// emitValue emits the value of a set variable. envLiteral keeps the source
// text, envExact the value (split into words for ${NAME[*]}); in the other
// modes the value is unknown and stands as a single '$' (so that rules can
// tell where it was). A default value already emitted from valueAt on is
// what HAProxy splits.
func (t *tokenizer) emitValue(start int, exp expansion, valueAt int) {
	switch t.mode {
	case envLiteral:
		t.cur = append(t.cur[:valueAt], t.s[start:t.i]...)
	case envExact:
		v, ok := t.env[exp.name]
		if !ok {
			v = string(t.cur[valueAt:])
		}
		t.cur = t.cur[:valueAt]
		t.emitExact(v, exp.list)
	default:
		if len(t.cur) == valueAt {
			t.cur = append(t.cur, '$')
		}
	}
}

// emitExact emits a known value; with list, spaces split it into words.
func (t *tokenizer) emitExact(v string, list bool) {
	for i := 0; i < len(v); i++ {
		if !list || !isCSpace(v[i]) {
			t.cur = append(t.cur, v[i])
			t.mixed = true
			continue
		}
		t.endWord()
		for i+1 < len(v) && isCSpace(v[i+1]) {
			i++
		}
	}
}

// lineWords is a line's words for callers that only need keywords and
// names (the syntax phase and the section index): expansions are kept as
// written.
type lineWords struct {
	words []string
}

// splitLine cuts one line into words as HAProxy 3.0 does, keeping
// environment expansions as written.
func splitLine(s string) lineWords {
	lt := tokenizeLine(s, envLiteral)
	out := lineWords{words: make([]string, len(lt.words))}
	for i, w := range lt.words {
		out.words[i] = w.text
	}
	return out
}

// physicalLines calls fn for each line of text as HAProxy's fgets loop
// reads it: split at '\n' only, numbered from 1. A final line without '\n'
// is a line too.
func physicalLines(text string, fn func(lineNo int, line string)) {
	lineNo := 1
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			fn(lineNo, text)
			return
		}
		fn(lineNo, text[:i])
		text = text[i+1:]
		lineNo++
	}
}

// isSpace reports whether c separates words within a line (C isspace minus
// the line terminators).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f'
}
