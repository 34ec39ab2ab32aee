package policy

// Environment expansion in parse_line() (src/tools.c, HAProxy 3.0): see the
// rules at the top of tokenize.go.

// leakingVars hold a host name or a path while `haproxy -c` runs; no grant
// lets a configuration expand them into a message.
var leakingVars = map[string]bool{".FILE": true, "HAPROXY_LOCALPEER": true, "HAPROXY_CFGFILES": true}

// checkerSetVars are the environment variables set while `haproxy -c`
// parses: the checker's own (see CheckerEnvironment) and those HAProxy 3.0 sets
// before or while parsing (src/haproxy.c, src/cfgparse-global.c,
// src/errors.c).
var checkerSetVars = map[string]bool{
	"PATH": true, "MALLOC_CONF": true, "HAPROXY_LOCALPEER": true, "HAPROXY_STARTUP_VERSION": true,
	"HAPROXY_HTTP_LOG_FMT": true, "HAPROXY_HTTPS_LOG_FMT": true,
	"HAPROXY_TCP_LOG_FMT": true, "HAPROXY_BRANCH": true,
	"HAPROXY_STARTUPLOGS_FD": true, "HAPROXY_CFGFILES": true,
	"HAPROXY_MWORKER": true, "HAPROXY_MWORKER_REEXEC": true,
	"HAPROXY_MWORKER_WAIT_ONLY": true, "HAPROXY_LOAD_SUCCESS": true,
}

// SetWhileChecking reports whether the policy reads the environment
// variable name as set while `haproxy -c` parses (checkerSetVars): every
// variable the checker's environment sets must be one of them.
func SetWhileChecking(name string) bool { return checkerSetVars[name] }

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
