package render

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"
)

// Sizes charged to the scratch budget for what a function allocates.
const (
	slotSize = 16 // one list element (an interface value)
	intSize  = 8  // one element of until's []int
)

// sprigFunc returns sprig's function name from staticFuncs as a T. It is
// called once per package, at init, for every sprig function a guarded or
// owning function wraps (here and in state.go): a sprig version that
// changes a wrapped function's signature stops the program at start
// (TestFunctionSet runs the init), never a render halfway, and never
// leaves the unguarded function in place.
func sprigFunc[T any](name string) T {
	f, ok := staticFuncs[name].(T)
	if !ok {
		panic(fmt.Sprintf("render: sprig function %q is a %T", name, staticFuncs[name]))
	}
	return f
}

// sprig's implementations the guarded functions delegate to.
var (
	sprigMustPush     = sprigFunc[func(any, any) ([]any, error)]("mustPush")
	sprigMustPrepend  = sprigFunc[func(any, any) ([]any, error)]("mustPrepend")
	sprigConcat       = sprigFunc[func(...any) any]("concat")
	sprigSeq          = sprigFunc[func(...int) string]("seq")
	sprigMustUniq     = sprigFunc[func(any) ([]any, error)]("mustUniq")
	sprigCat          = sprigFunc[func(...any) string]("cat")
	sprigJoin         = sprigFunc[func(string, any) string]("join")
	sprigIndent       = sprigFunc[func(int, string) string]("indent")
	sprigSortAlpha    = sprigFunc[func(any) []string]("sortAlpha")
	sprigDict         = sprigFunc[func(...any) map[string]any]("dict")
	sprigMustFromJSON = sprigFunc[func(string) (any, error)]("mustFromJson")
	sprigPick         = sprigFunc[func(map[string]any, ...string) map[string]any]("pick")
	sprigOmit         = sprigFunc[func(map[string]any, ...string) map[string]any]("omit")
	sprigURLParse     = sprigFunc[func(string) map[string]any]("urlParse")
	sprigRegexRepl    = map[string]func(string, string, string) string{
		"regexReplaceAll":        sprigFunc[func(string, string, string) string]("regexReplaceAll"),
		"regexReplaceAllLiteral": sprigFunc[func(string, string, string) string]("regexReplaceAllLiteral"),
	}
)

// guardedFuncs are the functions bound to one render's state s that check
// its deadline and charge what they build to its scratch budget: the
// functions loops use to build lists and strings (list, append, prepend,
// concat, printf, print, cat, join, include), those whose result can be
// far larger than their arguments (until, untilStep, seq, repeat, indent,
// nindent, replace, splitList, regexReplaceAll...) and uniq, which sprig
// implements in quadratic time; and htc's stateless helpers (fail, field,
// safe, word, quoteValue, keys, values) with a deadline check. They return
// what sprig, text/template's print functions or the helpers return for the
// same arguments.
func guardedFuncs(s *renderState) template.FuncMap {
	m := template.FuncMap{
		"list": s.list, "tuple": s.list,
		"append": s.push, "push": s.push, "mustAppend": s.push, "mustPush": s.push,
		"prepend": s.prepend, "mustPrepend": s.prepend,
		"concat": s.concat,
		"until":  s.until, "untilStep": s.untilStep, "seq": s.seq,
		"uniq": s.uniq, "mustUniq": s.uniq,
		"printf": s.printf, "print": s.print, "println": s.println, "cat": s.cat,
		"repeat": s.repeat, "join": s.join, "indent": s.indent, "nindent": s.nindent,
		"replace": s.replace, "splitList": s.splitList,
		"field": s.checkedField, "fail": s.fail,
		"sortAlpha": s.sortAlpha,
	}
	for name, f := range sprigRegexRepl {
		literal := name != "regexReplaceAll"
		must := "must" + strings.ToUpper(name[:1]) + name[1:]
		m[name] = s.regexReplace(name, literal, f)
		m[must] = s.mustRegexReplace(must, literal)
	}
	// htc's own functions, wrapped by name: the compiler checks their
	// signatures.
	m["safe"], m["word"], m["quoteValue"] = s.checked(safeFunc), s.checked(wordFunc), s.checked(quoteValueFunc)
	m["keys"] = func(dicts ...map[string]any) ([]string, error) {
		if err := s.interrupted(); err != nil {
			return nil, err
		}
		return sortedKeys(dicts...), nil
	}
	m["values"] = func(dict map[string]any) ([]any, error) {
		if err := s.interrupted(); err != nil {
			return nil, err
		}
		return sortedValues(dict), nil
	}
	return m
}

// checked returns f with a deadline check before it runs.
func (s *renderState) checked(f func(...any) (string, error)) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := s.interrupted(); err != nil {
			return "", err
		}
		return f(args...)
	}
}

// fail is fail with a deadline check: a render stopped by its deadline
// reports the deadline, whatever the template would have failed with.
func (s *renderState) fail(args ...any) (string, error) {
	if err := s.interrupted(); err != nil {
		return "", err
	}
	return failFunc(args...)
}

// checkedField is field with a deadline check.
func (s *renderState) checkedField(obj any, path string) (string, error) {
	if err := s.interrupted(); err != nil {
		return "", err
	}
	return s.field(obj, path)
}

// stringsSize is the total length of the strings among vs.
func stringsSize(vs ...any) int64 {
	var n int64
	for _, v := range vs {
		if str, ok := v.(string); ok {
			n += int64(len(str))
		}
	}
	return n
}

// produced charges a function's string result.
func (s *renderState) produced(fn, out string) (string, error) {
	if err := s.charge(fn, int64(len(out))); err != nil {
		return "", err
	}
	return out, nil
}

// printf implements text/template's printf (fmt.Sprintf), refusing before
// formatting when the result could exceed the budget, and what would print
// a memory address (checkFormat, checkPrintable).
func (s *renderState) printf(format string, args ...any) (string, error) {
	if err := s.fits("printf", satAdd(formatBound(format), argsBound(args))); err != nil {
		return "", err
	}
	if err := checkFormat(format); err != nil {
		return "", err
	}
	if err := checkPrintable("printf", args); err != nil {
		return "", err
	}
	return s.produced("printf", fmt.Sprintf(format, args...))
}

// print implements text/template's print (fmt.Sprint).
func (s *renderState) print(args ...any) (string, error) {
	if err := s.fits("print", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("print", fmt.Sprint(args...))
}

// println implements text/template's println (fmt.Sprintln).
func (s *renderState) println(args ...any) (string, error) {
	if err := s.fits("println", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("println", fmt.Sprintln(args...))
}

// cat implements sprig's cat.
func (s *renderState) cat(args ...any) (string, error) {
	if err := s.fits("cat", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("cat", sprigCat(args...))
}

// fits refuses a result that could be n bytes long when n exceeds the
// bundle limit or the scratch budget left, without charging it.
func (s *renderState) fits(fn string, n int64) error {
	if err := s.interrupted(); err != nil {
		return err
	}
	if s.done != nil && n > s.limit {
		return &LimitError{Func: fn, Value: true, Limit: s.limit}
	}
	if s.done != nil && n > s.scratch {
		return &LimitError{Func: fn, Scratch: true, Limit: satMul(s.limit, scratchFactor)}
	}
	return nil
}

// maxFmtNum is the largest width or precision fmt honours; larger ones
// print %!(BADWIDTH) or %!(BADPREC) instead of padding.
const maxFmtNum = 1e6

// fmtErrorSize bounds what fmt prints for a verb it cannot apply, and
// argOverhead what it adds to an argument's text (its type, when it reports
// an extra or a wrongly typed argument).
const (
	fmtErrorSize = 16
	argOverhead  = 48
)

// formatBound bounds what the verbs of format add to its arguments' text:
// the format's length plus every width and precision it names (a '*' takes
// its value from an argument, at most maxFmtNum).
func formatBound(format string) int64 {
	n := int64(len(format))
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		n += fmtErrorSize // "%!d(MISSING)", "%!(NOVERB)", ...
		num := int64(0)
		for i++; i < len(format); i++ {
			c := format[i]
			if c >= '0' && c <= '9' {
				num = min(num*10+int64(c-'0'), maxFmtNum)
				continue
			}
			n, num = n+num, 0
			if c == '*' {
				n += maxFmtNum
				continue
			}
			if strings.IndexByte("+-# .[]", c) < 0 {
				break // the verb
			}
		}
		n += num
	}
	return n
}

// argsBound bounds the text fmt makes of args: strings can grow four times
// (%q, %x), scalars take at most 32 bytes, anything else 64 (a list or map
// the template built prints as large as it is; see the package
// documentation).
func argsBound(args []any) int64 {
	n := int64(len(args)) * argOverhead
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n = satAdd(n, 4*int64(len(v)))
		case []byte:
			n = satAdd(n, 4*int64(len(v)))
		case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			n += 32
		default:
			n = satAdd(n, 64)
		}
	}
	return n
}

// repeat implements sprig's repeat.
func (s *renderState) repeat(count int, str string) (string, error) {
	if err := s.charge("repeat", satMul(int64(max(count, 0)), int64(len(str)))); err != nil {
		return "", err
	}
	return strings.Repeat(str, count), nil
}

// join implements sprig's join.
func (s *renderState) join(sep string, v any) (string, error) {
	n := satMul(listLen(v), int64(len(sep))+32)
	if l, ok := v.([]any); ok {
		n = satAdd(n, stringsSize(l...))
	} else if l, ok := v.([]string); ok {
		for _, e := range l {
			n = satAdd(n, int64(len(e)))
		}
	}
	if err := s.fits("join", n); err != nil {
		return "", err
	}
	return s.produced("join", sprigJoin(sep, v))
}

// indent implements sprig's indent.
func (s *renderState) indent(spaces int, v string) (string, error) {
	lines := int64(strings.Count(v, "\n")) + 1
	if err := s.charge("indent", satAdd(int64(len(v)), satMul(lines, int64(max(spaces, 0))))); err != nil {
		return "", err
	}
	return sprigIndent(spaces, v), nil
}

// nindent implements sprig's nindent.
func (s *renderState) nindent(spaces int, v string) (string, error) {
	out, err := s.indent(spaces, v)
	if err != nil {
		return "", err
	}
	return "\n" + out, nil
}

// replace implements sprig's replace: src with every old replaced by new.
func (s *renderState) replace(old, new, src string) (string, error) {
	n := int64(len(src))
	if len(new) > len(old) {
		count := int64(utf8.RuneCountInString(src)) + 1
		if old != "" {
			count = int64(strings.Count(src, old))
		}
		n = satAdd(n, satMul(count, int64(len(new)-len(old))))
	}
	if err := s.charge("replace", n); err != nil {
		return "", err
	}
	return strings.ReplaceAll(src, old, new), nil
}

// splitList implements sprig's splitList.
func (s *renderState) splitList(sep, orig string) ([]string, error) {
	count := int64(utf8.RuneCountInString(orig))
	if sep != "" {
		count = int64(strings.Count(orig, sep)) + 1
	}
	if err := s.charge("splitList", count*slotSize); err != nil {
		return nil, err
	}
	return strings.Split(orig, sep), nil
}

// replaceBound bounds the length of regexp's ReplaceAllString(src, repl):
// each match is replaced by repl, whose $ references each expand to at most
// the match. Literal replacements expand nothing.
func replaceBound(re *regexp.Regexp, src, repl string, literal bool) int64 {
	perMatch := int64(len(repl))
	dollars := int64(0)
	if !literal {
		dollars = int64(strings.Count(repl, "$"))
	}
	quick := satAdd(int64(len(src)), satMul(int64(len(src))+1, satAdd(perMatch, satMul(dollars, int64(len(src))))))
	if quick <= 1<<16 {
		return quick
	}
	n := int64(len(src))
	for _, m := range re.FindAllStringIndex(src, -1) {
		n = satAdd(n, satAdd(perMatch, satMul(dollars, int64(m[1]-m[0]))))
	}
	return n
}

// regexReplace implements regexReplaceAll and regexReplaceAllLiteral (f is
// sprig's, which panics on a bad expression).
func (s *renderState) regexReplace(name string, literal bool, f func(string, string, string) string) func(string, string, string) (string, error) {
	return func(regex, src, repl string) (string, error) {
		re, err := s.engine.regexps.compile(regex)
		if err != nil {
			return f(regex, src, repl), nil // sprig panics, as before
		}
		return s.replaceAll(name, re, src, repl, literal)
	}
}

// mustRegexReplace implements mustRegexReplaceAll and
// mustRegexReplaceAllLiteral.
func (s *renderState) mustRegexReplace(name string, literal bool) func(string, string, string) (string, error) {
	return func(regex, src, repl string) (string, error) {
		re, err := s.engine.regexps.compile(regex)
		if err != nil {
			return "", err
		}
		return s.replaceAll(name, re, src, repl, literal)
	}
}

func (s *renderState) replaceAll(fn string, re *regexp.Regexp, src, repl string, literal bool) (string, error) {
	if err := s.fits(fn, replaceBound(re, src, repl, literal)); err != nil {
		return "", err
	}
	if literal {
		return s.produced(fn, re.ReplaceAllLiteralString(src, repl))
	}
	return s.produced(fn, re.ReplaceAllString(src, repl))
}

// sortAlpha is sprig's sortAlpha on a copy of a []string: sprig sorts a
// []string in place, which would change a list other values share.
func (s *renderState) sortAlpha(list any) ([]string, error) {
	if err := s.charge("sortAlpha", listLen(list)*slotSize); err != nil {
		return nil, err
	}
	if l, ok := list.([]string); ok {
		list = slices.Clone(l)
	}
	return sprigSortAlpha(list), nil
}
