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
			s.useMapFile(at, kw+" -f", args[i+1], asMap, "")
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
			args := callArgs(t[i:], 2) // jwt_verify(<alg>,<key>)
			if len(args) > 1 && !isVarName(args[1]) {
				s.funcPath(at, name, args[1], w.Env, false, false, "")
			}
		case fileFunction(name):
			args := callArgs(t[i:], 2) // map*(<map_file>[,<default_value>])
			if len(args) > 0 {
				s.funcPath(at, name, args[0], w.Env, true, true, name)
			}
		}
	}
}

// funcPath checks the file argument p of a converter or action; conv is
// the map converter's name ("" for another function).
func (s *policyScan) funcPath(at loc, name, p string, env, isMap, asMap bool, conv string) {
	what := name + "()"
	if env {
		s.add(at, "", what+": a path built from an environment variable cannot be checked")
		return
	}
	if isMap {
		s.useMapFile(at, what, cfgtext.Word{Text: p}, asMap, conv)
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

// callArgs are the arguments of the call at the start of s ("(...") to a
// function taking at most nbargs, as make_arg_list() reads them
// (cfgtext.MakeArgList). When HAProxy rejects the list, they are the
// arguments read in full before the error: HAProxy then refuses the line
// and opens nothing, so checking them can only deny more.
func callArgs(s string, nbargs int) []string {
	args, _, _ := cfgtext.MakeArgList(s, nbargs, 0)
	return args
}
