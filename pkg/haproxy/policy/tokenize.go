package policy

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
	// whole is the word with its NUL bytes when text was cut at one ("" for
	// every other word): readcfgfile() joins the words of a .if line back
	// into one string, NULs included.
	whole string
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
	// trailingSep is true when a separator follows the last word: the
	// joined words of a .if line then end with a space.
	trailingSep bool
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
	return (&tokenizer{}).tokenize(line, mode, env)
}

// tokenize cuts line into words reusing t's buffers: the result's words
// are valid until the next call on t.
func (t *tokenizer) tokenize(line string, mode envMode, env map[string]string) lineTokens {
	*t = tokenizer{s: line, mode: mode, env: env, cur: t.cur[:0],
		out: lineTokens{words: t.out.words[:0], exps: t.out.exps[:0]}}
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
			// This byte and the plain ones after it, at once: each would
			// come here, right after the one before it.
			j := t.i + 1
			for j < len(t.s) && plainByte(t.s[j]) {
				j++
			}
			t.cur = append(t.cur, t.s[t.i:j]...)
			t.i = j
		}
	}
	t.finish()
}

// plainByte reports whether c is taken as it is in any state of the loop
// in run: not a line end, comment, quote, escape, space or expansion.
func plainByte(c byte) bool {
	switch {
	case c == 0, c == '\n', c == '\r', c == '#', c == '"', c == '\'', c == '\\', c == '$', isCSpace(c):
		return false
	}
	return true
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
	var text, whole string
	if !t.mixed {
		text = t.s[t.wstart : t.wstart+len(t.cur)]
	} else {
		w := t.cur
		for i, c := range w {
			if c == 0 {
				w = w[:i]
				whole = string(t.cur)
				break
			}
		}
		text = string(w)
	}
	t.out.words = append(t.out.words, cfgWord{text: text, env: t.curEnv, whole: whole})
	t.cur = t.cur[:0]
	t.curEnv = false
	t.mixed = false
}

// finish ends the line: the last word counts only when it has characters,
// and an open quote rejects the line.
func (t *tokenizer) finish() {
	if len(t.cur) > 0 {
		t.push()
	} else {
		t.out.trailingSep = len(t.out.words) > 0
	}
	if t.out.err == errNone && (t.squote || t.dquote) {
		t.out.err = errQuote
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

// isSpace reports whether c separates words within a line (C isspace minus
// the line terminators).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f'
}
