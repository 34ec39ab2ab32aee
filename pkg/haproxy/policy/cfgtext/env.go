package cfgtext

// Environment expansion in parse_line() (src/tools.c, HAProxy 3.0): see the
// rules at the top of tokenize.go.

// leakingVars hold a host name or a path while `haproxy -c` runs; no grant
// lets a configuration expand them into a message.
var leakingVars = map[string]bool{".FILE": true, "HAPROXY_LOCALPEER": true, "HAPROXY_CFGFILES": true}

// checkerSetVars are the environment variables set while `haproxy -c`
// parses: the checker's own (see haproxy.CheckerEnvironment) and those HAProxy 3.0 sets
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

// Leaking reports whether the variable name holds a host name or a path
// while `haproxy -c` runs (leakingVars).
func Leaking(name string) bool { return leakingVars[name] }

// SetWhileChecking reports whether the policy reads the environment
// variable name as set while `haproxy -c` parses (checkerSetVars): every
// variable the checker's environment sets must be one of them.
func SetWhileChecking(name string) bool { return checkerSetVars[name] }

// expand handles '$' inside double quotes (t.s[t.i] == '$').
func (t *Tokenizer) expand() {
	start := t.i
	t.i++
	brace := t.i < len(t.s) && t.s[t.i] == '{'
	if brace {
		t.i++
	}
	if t.i >= len(t.s) || !(isAlpha(t.s[t.i]) || t.s[t.i] == '_' || t.s[t.i] == '.') {
		t.out.Err = ErrVarName
		return
	}
	nameStart := t.i
	if t.s[t.i] == '.' {
		t.i++
	}
	for t.i < len(t.s) && (IsAlnum(t.s[t.i]) || t.s[t.i] == '_') {
		t.i++
	}
	exp := Expansion{Name: t.s[nameStart:t.i]}
	pseudo := exp.Name[0] == '.'
	if pseudo && exp.Name != ".LINE" && exp.Name != ".FILE" && exp.Name != ".SECTION" {
		t.out.Err = ErrVarName
		return
	}
	if brace && t.i < len(t.s) && t.s[t.i] == '[' {
		if t.i+2 >= len(t.s) || t.s[t.i+1] != '*' || t.s[t.i+2] != ']' {
			t.out.Err = ErrWordExpand
			return
		}
		exp.List = true
		t.i += 3
	}
	set := t.varSet(exp.Name)
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
		for t.i < len(t.s) && IsCSpace(t.s[t.i]) {
			t.i++
		}
		t.dquote = false
		exp.Glued = t.i < len(t.s) && t.s[t.i] != 0 && t.s[t.i] != '#'
	}
	t.keep(exp)
}

// keep records an expansion within the bounds of maxKeptExpansions.
func (t *Tokenizer) keep(e Expansion) {
	t.out.NExp++
	kind := -1
	switch {
	case leakingVars[e.Name]:
		kind = 0
	case e.List:
		kind = 1
	case e.Glued:
		kind = 2
	}
	if len(t.out.Exps) < maxKeptExpansions || (kind >= 0 && !t.out.kept[kind]) {
		t.out.Exps = append(t.out.Exps, e)
		if kind >= 0 {
			t.out.kept[kind] = true
		}
	}
}

// varSet reports whether the variable name is set in the tokenizer's mode.
func (t *Tokenizer) varSet(name string) bool {
	switch t.mode {
	case EnvChecker:
		return checkerSetVars[name]
	case EnvExact:
		_, ok := t.env[name]
		return ok
	default:
		return true
	}
}

// closeBrace consumes an optional "-default" and the closing brace; under
// EnvChecker an unset variable takes the default's raw text. hasDefault
// reports a default (HAProxy then never sees the variable as unset); ok is
// false (and the error set) on a missing brace.
func (t *Tokenizer) closeBrace(set bool) (hasDefault, ok bool) {
	if t.i < len(t.s) && t.s[t.i] == '-' {
		end := t.i
		for end < len(t.s) && t.s[end] != '}' && t.s[end] != 0 {
			end++
		}
		if end >= len(t.s) || t.s[end] != '}' {
			t.out.Err = ErrBrace
			return false, false
		}
		if !set && (t.mode == EnvChecker || t.mode == EnvExact) {
			t.cur = append(t.cur, t.s[t.i+1:end]...)
		}
		t.i = end + 1
		return true, true
	}
	if t.i >= len(t.s) || t.s[t.i] != '}' {
		t.out.Err = ErrBrace
		return false, false
	}
	t.i++
	return false, true
}

// emitValue emits the value of a set variable. EnvLiteral keeps the source
// text, EnvExact the value (split into words for ${NAME[*]}); in the other
// modes the value is unknown and stands as a single '$' (so that rules can
// tell where it was). A default value already emitted from valueAt on is
// what HAProxy splits.
func (t *Tokenizer) emitValue(start int, exp Expansion, valueAt int) {
	switch t.mode {
	case EnvLiteral:
		t.cur = append(t.cur[:valueAt], t.s[start:t.i]...)
	case EnvExact:
		v, ok := t.env[exp.Name]
		if !ok {
			v = string(t.cur[valueAt:])
		}
		t.cur = t.cur[:valueAt]
		t.emitExact(v, exp.List)
	default:
		if len(t.cur) == valueAt {
			t.cur = append(t.cur, '$')
		}
	}
}

// emitExact emits a known value; with list, spaces split it into words.
func (t *Tokenizer) emitExact(v string, list bool) {
	for i := 0; i < len(v); i++ {
		if !list || !IsCSpace(v[i]) {
			t.cur = append(t.cur, v[i])
			t.mixed = true
			continue
		}
		t.endWord()
		for i+1 < len(v) && IsCSpace(v[i+1]) {
			i++
		}
	}
}
