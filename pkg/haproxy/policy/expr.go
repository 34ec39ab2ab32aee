package policy

import (
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// maxCallsPerWord bounds the file and environment function calls checked
// in one word; real configurations have a handful.
const maxCallsPerWord = 64

// scanArgs applies the rules that hold for every argument of every line,
// wherever sample expressions and ACLs may appear: the file of ACL "-f"
// flags, the file arguments of converters and the env() fetch.
func (s *policyScan) scanArgs(at loc, kw string, args []cfgtext.Word) {
	asMap := false
	for _, w := range args {
		if w.Text == "-M" {
			asMap = true
		}
	}
	for i, w := range args {
		if w.Text == "-f" && i+1 < len(args) {
			s.useMapFile(at, kw+" -f", args[i+1], asMap, false)
		}
		if strings.IndexByte(w.Text, '(') >= 0 {
			s.scanFunctions(at, w)
		}
	}
}

// isIDChar is HAProxy's is_idchar() (include/haproxy/tools.h): the
// characters of fetch and converter names.
func isIDChar(c byte) bool {
	return cfgtext.IsAlnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == ':'
}

// scanFunctions finds every "name(" in a word, the name being the longest
// run of is_idchar() characters before the parenthesis, as
// sample_parse_expr() reads fetch and converter names, and checks the ones
// that read a file or the environment. Names are compared in lower case
// (HAProxy is case-sensitive, so this only denies more).
func (s *policyScan) scanFunctions(at loc, w cfgtext.Word) {
	t := w.Text
	calls := 0
	for i := 0; i < len(t); i++ {
		if t[i] != '(' {
			continue
		}
		j := i
		for j > 0 && isIDChar(t[j-1]) {
			j--
		}
		name := strings.ToLower(t[j:i])
		if name == "env" || name == "jwt_verify" || fileFunction(name) {
			// Each call's arguments are read to their end: bound the
			// calls per word so that the scan stays linear.
			if calls++; calls > maxCallsPerWord {
				s.add(at, "", "more than "+strconv.Itoa(maxCallsPerWord)+" file or environment functions in one word")
				return
			}
		}
		switch {
		case name == "env":
			s.refuseEnv(at)
		case name == "jwt_verify":
			args := makeArgList(t[i:])
			if len(args) > 1 && !isVarName(args[1]) {
				s.funcPath(at, name, args[1], w.Env, false, false, false)
			}
		case fileFunction(name):
			args := makeArgList(t[i:])
			if len(args) > 0 {
				s.funcPath(at, name, args[0], w.Env, true, true, looseConverter(name))
			}
		}
	}
}

// funcPath checks the file argument p of a converter or action.
func (s *policyScan) funcPath(at loc, name, p string, env, isMap, asMap, loose bool) {
	what := name + "()"
	if env {
		s.add(at, "", what+": a path built from an environment variable cannot be checked")
		return
	}
	if isMap {
		s.useMapFile(at, what, cfgtext.Word{Text: p}, asMap, loose)
		return
	}
	s.checkRef(at, fileRef{directive: what, path: p, mode: refRead}, refUse{})
}

// fileFunction reports whether a converter named name takes a map file as
// its first argument: every map converter (map, map_<match>[_<output>],
// src/map.c). The set-map, del-map, add-acl and del-acl actions are
// http-request/response words, handled with the rule (httpRule).
func fileFunction(name string) bool {
	return name == "map" || strings.HasPrefix(name, "map_")
}

// isVarName reports whether a converter argument names a variable, which
// vars_check_arg() turns into a variable reference instead of a string
// (src/vars.c vars_hash_name: a scope prefix).
func isVarName(a string) bool {
	for _, p := range []string{"proc.", "sess.", "txn.", "req.", "res.", "check."} {
		if strings.HasPrefix(a, p) && len(a) > len(p) {
			return true
		}
	}
	return false
}

// maxArgLen is the longest argument make_arg_list() copies (the trash
// buffer, 16384 bytes less the final NUL); a longer one is an error, and
// HAProxy then opens nothing.
const maxArgLen = 16383

// makeArgList reads the arguments of a function call as HAProxy 3.0's
// make_arg_list() (src/arg.c) does; s starts with '('. Arguments end at
// ',' or ')' outside quotes; single and double quotes are removed; '\'
// escapes '\', ' ', '"' and '\” and gives CR, LF and TAB for r, n and t,
// and is kept before any other character.
func makeArgList(s string) []string {
	var args []string
	i := 1
	for {
		var b strings.Builder
		var sq, dq bool
	arg:
		for i < len(s) {
			if b.Len() >= maxArgLen {
				return nil
			}
			c := s[i]
			switch {
			case c == '"' && !sq:
				dq = !dq
			case c == '\'' && !dq:
				sq = !sq
			case c == '\\' && !sq && i+1 < len(s):
				i++
				b.WriteByte(unescapeArg(s[i]))
				if !isArgEscape(s[i]) {
					continue
				}
			case (c == ',' || c == ')') && !sq && !dq:
				break arg
			default:
				b.WriteByte(c)
			}
			i++
		}
		args = append(args, b.String())
		if i >= len(s) || s[i] == ')' {
			return args
		}
		i++ // the comma
	}
}

// isArgEscape reports whether '\' followed by c is an escape sequence of
// make_arg_list().
func isArgEscape(c byte) bool {
	switch c {
	case '\\', ' ', '"', '\'', 'r', 'n', 't':
		return true
	}
	return false
}

// unescapeArg is the byte make_arg_list() emits for '\' followed by c: the
// escaped character, or the backslash itself when c is not escapable (c is
// then read again as a character of its own).
func unescapeArg(c byte) byte {
	switch c {
	case 'r':
		return '\r'
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case '\\', ' ', '"', '\'':
		return c
	}
	return '\\'
}
