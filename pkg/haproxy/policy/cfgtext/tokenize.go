package cfgtext

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

// MaxLineWords is MAX_LINE_ARGS of HAProxy 3.0 (include/haproxy/defaults.h):
// a line with more words is rejected (ErrTooMany).
const MaxLineWords = 64

// EnvMode says how Tokenize treats environment expansions, whose values
// the policy cannot know.
type EnvMode uint8

const (
	// EnvLiteral keeps an expansion's text ("$NAME", "${NAME}") in the word,
	// for callers that only need keywords and section names.
	EnvLiteral EnvMode = iota
	// EnvChecker behaves as HAProxy under the checker's scrubbed environment:
	// the variables HAProxy or the checker set (checkerSetVars) and the
	// pseudo variables expand to an unknown value, every other variable is
	// unset, with HAProxy's quote-dropping quirk.
	EnvChecker
	// EnvAllSet expands every variable to an unknown, non-empty value.
	EnvAllSet
	// EnvExact expands variables from the env argument exactly as HAProxy
	// would (tests compare it with haproxy itself).
	EnvExact
)

// ParseError is a reason HAProxy rejects a line without executing it.
type ParseError uint8

const (
	// NoError: HAProxy accepts the line.
	NoError ParseError = iota
	// ErrQuote: a quote is left open.
	ErrQuote
	// ErrBrace: "${" without its closing brace.
	ErrBrace
	// ErrVarName: '$' not followed by a variable name HAProxy accepts.
	ErrVarName
	// ErrHex: "\x" not followed by two hexadecimal digits.
	ErrHex
	// ErrWordExpand: "${NAME[" not followed by "*]".
	ErrWordExpand
	// ErrTooMany: more than MaxLineWords words.
	ErrTooMany
)

// Word is one word of a configuration line.
type Word struct {
	// Text is the decoded word, cut at its first NUL byte. An expansion
	// whose value is unknown stands as a single '$'.
	Text string
	// Env is true when an environment expansion contributed to the word.
	Env bool
	// Whole is the word with its NUL bytes when Text was cut at one (""
	// for every other word): readcfgfile() joins the words of a .if line
	// back into one string, NULs included.
	Whole string
}

// Expansion is one environment expansion found on a line.
type Expansion struct {
	// Name is the variable name (".FILE" for a pseudo variable).
	Name string
	// List is true for the ${NAME[*]} word-splitting form.
	List bool
	// Glued is true when, under EnvChecker, the variable is unset and
	// HAProxy dropped the closing quote and the spaces after it, so that
	// the next word was glued to this one.
	Glued bool
}

// maxKeptExpansions bounds the expansions a Line keeps (a line may
// hold millions); one of each special kind (leaking name, list, glued) is
// always kept.
const maxKeptExpansions = 64

// Line is one configuration line cut into words.
type Line struct {
	// Words are the line's words.
	Words []Word
	// Exps are the line's first expansions and the first of each special
	// kind (see maxKeptExpansions); NExp counts them all.
	Exps []Expansion
	// NExp is the number of expansions on the line.
	NExp int
	kept [3]bool // a leaking, a list and a glued expansion are in Exps
	// Err is why HAProxy rejects the line, NoError when it accepts it.
	Err ParseError
	// Rest is what follows a NUL or '\r' that ended the line: HAProxy
	// ignores it, the policy scans it too.
	Rest string
	// Scope is true for a "[name]" scope declaration line.
	Scope bool
	// TrailingSep is true when a separator follows the last word: the
	// joined words of a .if line then end with a space.
	TrailingSep bool
}

// IsCSpace is C isspace() in the C locale.
func IsCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// isAlpha is C isalpha() in the C locale.
func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// IsAlnum is C isalnum() in the C locale.
func IsAlnum(c byte) bool { return isAlpha(c) || (c >= '0' && c <= '9') }

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

// Tokenizer is the state of one parse_line run; its zero value is ready,
// and it keeps its buffers from one line to the next (see
// Tokenizer.Tokenize). It is not safe for concurrent use.
type Tokenizer struct {
	s      string
	i      int
	mode   EnvMode
	out    Line
	cur    []byte
	curEnv bool
	squote bool
	dquote bool
	env    map[string]string // EnvExact only
	// mixed is true when the current word is not a plain substring of the
	// line starting at wstart (an escape, an expansion or a quote broke
	// it); a plain word is taken from the line without a copy.
	mixed  bool
	wstart int
}

// Tokenize cuts one physical line (without its '\n') into words as
// HAProxy 3.0 does.
func Tokenize(line string, mode EnvMode) Line {
	return TokenizeEnv(line, mode, nil)
}

// TokenizeEnv is Tokenize with the environment env for EnvExact.
func TokenizeEnv(line string, mode EnvMode, env map[string]string) Line {
	return (&Tokenizer{}).Tokenize(line, mode, env)
}

// Tokenize cuts line into words as Tokenize does, with the environment
// env for EnvExact, reusing t's buffers: the result's words are valid until
// the next call on t.
func (t *Tokenizer) Tokenize(line string, mode EnvMode, env map[string]string) Line {
	*t = Tokenizer{s: line, mode: mode, env: env, cur: t.cur[:0],
		out: Line{Words: t.out.Words[:0], Exps: t.out.Exps[:0]}}
	for t.i < len(line) && IsCSpace(line[t.i]) {
		t.i++
	}
	if t.i < len(line) && line[t.i] == '[' {
		t.out.Scope = true
		t.out.Rest = line[t.i:]
		return t.out
	}
	t.run()
	return t.out
}

// run is the main loop of parse_line.
func (t *Tokenizer) run() {
	for t.i < len(t.s) && t.out.Err == NoError {
		c := t.s[t.i]
		switch {
		case c == 0 || c == '\n' || c == '\r':
			t.out.Rest = t.s[t.i+1:]
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
		case IsCSpace(c) && !t.squote && !t.dquote:
			for t.i < len(t.s) && IsCSpace(t.s[t.i]) {
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
	case c == 0, c == '\n', c == '\r', c == '#', c == '"', c == '\'', c == '\\', c == '$', IsCSpace(c):
		return false
	}
	return true
}

// escape handles a backslash outside single quotes.
func (t *Tokenizer) escape() {
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
			t.out.Err = ErrHex
			return
		}
		send, skip = hi<<4|lo, 4
	}
	t.cur = append(t.cur, send)
	t.mixed = true
	t.i += skip
}

// endWord closes the current word at a separator.
func (t *Tokenizer) endWord() {
	t.push()
	if len(t.out.Words) >= MaxLineWords {
		t.out.Err = ErrTooMany
	}
}

// push appends the current word, even when empty.
func (t *Tokenizer) push() {
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
	t.out.Words = append(t.out.Words, Word{Text: text, Env: t.curEnv, Whole: whole})
	t.cur = t.cur[:0]
	t.curEnv = false
	t.mixed = false
}

// finish ends the line: the last word counts only when it has characters,
// and an open quote rejects the line.
func (t *Tokenizer) finish() {
	if len(t.cur) > 0 {
		t.push()
	} else {
		t.out.TrailingSep = len(t.out.Words) > 0
	}
	if t.out.Err == NoError && (t.squote || t.dquote) {
		t.out.Err = ErrQuote
	}
}

// Words cuts one line into words as HAProxy 3.0 does, keeping environment
// expansions as written: for callers that only need keywords and names
// (the syntax phase and the section index).
func Words(line string) []string {
	lt := Tokenize(line, EnvLiteral)
	out := make([]string, len(lt.Words))
	for i, w := range lt.Words {
		out[i] = w.Text
	}
	return out
}
