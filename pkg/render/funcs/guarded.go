package funcs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"
	"unsafe"
)

// Sizes charged to the scratch budget for what a function allocates.
const (
	slotSize = 16 // one list element (an interface value)
	intSize  = 8  // one element of until's []int
)

// Meter is the budget of the render a Set's functions run in (package
// budget's Budget): they check its deadline and charge what they build to it.
type Meter interface {
	// Interrupted is the render context's error once it has ended, else
	// nil; cheap enough for every call.
	Interrupted() error
	// Charge counts n bytes of a value fn builds against the render's
	// scratch budget, failing (a *budget.LimitError) past it or past the
	// bundle limit.
	Charge(fn string, n int64) error
	// Fits refuses, without charging it, a value fn could build of up to n
	// bytes that would exceed either limit.
	Fits(fn string, n int64) error
}

// Set is the guarded functions of one render: bound to its Meter, with
// what push knows of the lists it made. One render at a time uses it.
type Set struct {
	m       Meter
	regexps *Regexps
	// tails holds, per backing array push made, its longest list and its
	// capacity (see push).
	tails map[unsafe.Pointer]tail
	// order returns the keys of a dict in order when the render knows
	// them already (nil: it does not), for keys and values (SetOrder).
	order func(map[string]any) []string
	// joined returns join SEP LIST when the render knows it without
	// joining (SetJoined).
	joined func(sep string, list any) (string, bool)
	// newline returns printf "%s\n" STR when the render knows it
	// without a copy (SetJoined).
	newline func(str string) (string, bool)
}

// SetOrder makes keys and values of one dict take its keys from order
// when order knows them (a non-nil answer, which must be the dict's keys
// in order and is not modified): the render knows the order of what
// emitted returns without sorting it again.
func (s *Set) SetOrder(order func(map[string]any) []string) { s.order = order }

// SetJoined makes join SEP LIST take its text from joined when joined
// knows it (true), which must be what sprig's join returns of a list
// whose every element is a string (join sizes it by the text), and printf
// "%s\n" STR from newline when it knows it (STR and a newline).
func (s *Set) SetJoined(joined func(sep string, list any) (string, bool), newline func(str string) (string, bool)) {
	s.joined, s.newline = joined, newline
}

// knownOrder returns the keys of d in order when s's order knows them,
// else nil.
func (s *Set) knownOrder(d map[string]any) []string {
	if s.order == nil {
		return nil
	}
	return s.order(d)
}

// NewSet returns the guarded functions charging m, compiling regular
// expressions through regexps (nil: compiled per call).
func NewSet(m Meter, regexps *Regexps) *Set { return &Set{m: m, regexps: regexps} }

// Reset forgets the lists push made, between two renders (nil: nothing).
func (s *Set) Reset() {
	if s != nil {
		s.tails = nil
	}
}

// Sprig returns sprig's function name, as the static set has it, as a T.
// It is called once per package, at init, for every sprig function a
// guarded or owning function wraps (here and in package render's
// state.go): a sprig version that changes a wrapped function's signature
// stops the program at start, never a render halfway, and never leaves
// the unguarded function in place.
func Sprig[T any](name string) T {
	f, ok := static[name].(T)
	if !ok {
		panic(fmt.Sprintf("render: sprig function %q is a %T", name, static[name]))
	}
	return f
}

// sprig's implementations the guarded functions delegate to.
var (
	sprigMustPush    = Sprig[func(any, any) ([]any, error)]("mustPush")
	sprigMustPrepend = Sprig[func(any, any) ([]any, error)]("mustPrepend")
	sprigConcat      = Sprig[func(...any) any]("concat")
	sprigSeq         = Sprig[func(...int) string]("seq")
	sprigMustUniq    = Sprig[func(any) ([]any, error)]("mustUniq")
	sprigCat         = Sprig[func(...any) string]("cat")
	sprigJoin        = Sprig[func(string, any) string]("join")
	sprigIndent      = Sprig[func(int, string) string]("indent")
	sprigSortAlpha   = Sprig[func(any) []string]("sortAlpha")
	sprigRegexRepl   = map[string]func(string, string, string) string{
		"regexReplaceAll":        Sprig[func(string, string, string) string]("regexReplaceAll"),
		"regexReplaceAllLiteral": Sprig[func(string, string, string) string]("regexReplaceAllLiteral"),
	}
)

// Funcs are the functions of s that check the render's deadline and
// charge what they build to its scratch budget: the functions loops use
// to build lists and strings (list, append, prepend, concat, printf,
// print, cat, join), those whose result can be far larger than their
// arguments (until, untilStep, seq, repeat, indent, nindent, replace,
// splitList, regexReplaceAll...) and uniq, which sprig implements in
// quadratic time; and keys, values, regexMatch and mustRegexMatch with a
// deadline check. They return what sprig, text/template's print functions
// or Static's return for the same arguments; init checks that each takes
// the arguments of the function it replaces.
func (s *Set) Funcs() template.FuncMap {
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
		"sortAlpha": s.sortAlpha,
		"keys":      s.keys, "values": s.values,
		"regexMatch": s.regexMatch, "mustRegexMatch": s.mustRegexMatch,
	}
	for name, f := range sprigRegexRepl {
		literal := name != "regexReplaceAll"
		must := "must" + strings.ToUpper(name[:1]) + name[1:]
		m[name] = s.regexReplace(name, literal, f)
		m[must] = s.mustRegexReplace(must, literal)
	}
	return m
}

// keys is sortedKeys with a deadline check (the keys of one dict whose
// order the render knows, a copy of them).
func (s *Set) keys(dicts ...map[string]any) ([]string, error) {
	if err := s.m.Interrupted(); err != nil {
		return nil, err
	}
	if len(dicts) == 1 {
		if ks := s.knownOrder(dicts[0]); ks != nil {
			return slices.Clone(ks), nil
		}
	}
	return sortedKeys(dicts...), nil
}

// values is sortedValues with a deadline check (in the order of the
// dict's keys the render knows, when it does).
func (s *Set) values(dict map[string]any) ([]any, error) {
	if err := s.m.Interrupted(); err != nil {
		return nil, err
	}
	if ks := s.knownOrder(dict); ks != nil {
		out := make([]any, len(ks))
		for i, k := range ks {
			out[i] = dict[k]
		}
		return out, nil
	}
	return sortedValues(dict), nil
}

// produced charges a function's string result.
func (s *Set) produced(fn, out string) (string, error) {
	if err := s.m.Charge(fn, int64(len(out))); err != nil {
		return "", err
	}
	return out, nil
}

// printf implements text/template's printf (fmt.Sprintf), refusing before
// formatting when the result could exceed the budget, and what would print
// a memory address (checkFormat, checkPrintable).
func (s *Set) printf(format string, args ...any) (string, error) {
	if err := s.m.Fits("printf", SatAdd(formatBound(format), argsBound(args))); err != nil {
		return "", err
	}
	if err := checkFormat(format); err != nil {
		return "", err
	}
	if err := checkPrintable("printf", args); err != nil {
		return "", err
	}
	if str, ok := args0String(args); ok && format == "%s\n" {
		if s.newline != nil {
			if out, ok := s.newline(str); ok {
				return s.produced("printf", out)
			}
		}
		return s.produced("printf", str+"\n") // fmt.Sprintf's text, in one copy
	}
	return s.produced("printf", fmt.Sprintf(format, args...))
}

// args0String returns the only argument of args when it is a string.
func args0String(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	str, ok := args[0].(string)
	return str, ok
}

// print implements text/template's print (fmt.Sprint).
func (s *Set) print(args ...any) (string, error) {
	if err := s.m.Fits("print", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("print", fmt.Sprint(args...))
}

// println implements text/template's println (fmt.Sprintln).
func (s *Set) println(args ...any) (string, error) {
	if err := s.m.Fits("println", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("println", fmt.Sprintln(args...))
}

// cat implements sprig's cat.
func (s *Set) cat(args ...any) (string, error) {
	if err := s.m.Fits("cat", argsBound(args)); err != nil {
		return "", err
	}
	return s.produced("cat", sprigCat(args...))
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
			n = SatAdd(n, 4*int64(len(v)))
		case []byte:
			n = SatAdd(n, 4*int64(len(v)))
		case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			n += 32
		default:
			n = SatAdd(n, 64)
		}
	}
	return n
}

// repeat implements sprig's repeat.
func (s *Set) repeat(count int, str string) (string, error) {
	if err := s.m.Charge("repeat", SatMul(int64(max(count, 0)), int64(len(str)))); err != nil {
		return "", err
	}
	return strings.Repeat(str, count), nil
}

// join implements sprig's join.
func (s *Set) join(sep string, v any) (string, error) {
	n := SatMul(listLen(v), int64(len(sep))+32)
	if s.joined != nil {
		if out, ok := s.joined(sep, v); ok {
			if res, ok, err := s.JoinedText(sep, listLen(v), out); ok {
				return res, err
			}
		}
	}
	if l, ok := v.([]any); ok {
		n = SatAdd(n, StringsSize(l...))
	} else if l, ok := v.([]string); ok {
		for _, e := range l {
			n = SatAdd(n, int64(len(e)))
		}
	}
	if err := s.m.Fits("join", n); err != nil {
		return "", err
	}
	return s.produced("join", sprigJoin(sep, v))
}

// Join is the template function join: join SEP LIST.
func (s *Set) Join(sep string, v any) (string, error) { return s.join(sep, v) }

// JoinedText is join SEP LIST for a LIST of k strings whose join the
// render knows to be out without joining them (SetJoined,
// fragments.Channel.Joined): join's size check and record of what it
// produced, false when out cannot be such a join (then join them). The
// strings' size, which join adds by reading 10,000 values, is the text's
// less its separators.
func (s *Set) JoinedText(sep string, k int64, out string) (string, bool, error) {
	size := int64(len(out)) - int64(len(sep))*max(k-1, 0)
	if k <= 0 || size < 0 {
		return "", false, nil
	}
	if err := s.m.Fits("join", SatAdd(SatMul(k, int64(len(sep))+32), size)); err != nil {
		return "", true, err
	}
	res, err := s.produced("join", out)
	return res, true, err
}

// indent implements sprig's indent.
func (s *Set) indent(spaces int, v string) (string, error) {
	lines := int64(strings.Count(v, "\n")) + 1
	if err := s.m.Charge("indent", SatAdd(int64(len(v)), SatMul(lines, int64(max(spaces, 0))))); err != nil {
		return "", err
	}
	return sprigIndent(spaces, v), nil
}

// nindent implements sprig's nindent.
func (s *Set) nindent(spaces int, v string) (string, error) {
	out, err := s.indent(spaces, v)
	if err != nil {
		return "", err
	}
	return "\n" + out, nil
}

// replace implements sprig's replace: src with every old replaced by new.
func (s *Set) replace(old, new, src string) (string, error) {
	n := int64(len(src))
	if len(new) > len(old) {
		count := int64(utf8.RuneCountInString(src)) + 1
		if old != "" {
			count = int64(strings.Count(src, old))
		}
		n = SatAdd(n, SatMul(count, int64(len(new)-len(old))))
	}
	if err := s.m.Charge("replace", n); err != nil {
		return "", err
	}
	return strings.ReplaceAll(src, old, new), nil
}

// splitList implements sprig's splitList.
func (s *Set) splitList(sep, orig string) ([]string, error) {
	count := int64(utf8.RuneCountInString(orig))
	if sep != "" {
		count = int64(strings.Count(orig, sep)) + 1
	}
	if err := s.m.Charge("splitList", count*slotSize); err != nil {
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
	quick := SatAdd(int64(len(src)), SatMul(int64(len(src))+1, SatAdd(perMatch, SatMul(dollars, int64(len(src))))))
	if quick <= 1<<16 {
		return quick
	}
	n := int64(len(src))
	for _, m := range re.FindAllStringIndex(src, -1) {
		n = SatAdd(n, SatAdd(perMatch, SatMul(dollars, int64(m[1]-m[0]))))
	}
	return n
}

// regexReplace implements regexReplaceAll and regexReplaceAllLiteral (f is
// sprig's, which panics on a bad expression).
func (s *Set) regexReplace(name string, literal bool, f func(string, string, string) string) func(string, string, string) (string, error) {
	return func(regex, src, repl string) (string, error) {
		re, err := s.regexps.Compile(regex)
		if err != nil {
			return f(regex, src, repl), nil // sprig panics, as before
		}
		return s.replaceAll(name, re, src, repl, literal)
	}
}

// mustRegexReplace implements mustRegexReplaceAll and
// mustRegexReplaceAllLiteral.
func (s *Set) mustRegexReplace(name string, literal bool) func(string, string, string) (string, error) {
	return func(regex, src, repl string) (string, error) {
		re, err := s.regexps.Compile(regex)
		if err != nil {
			return "", err
		}
		return s.replaceAll(name, re, src, repl, literal)
	}
}

func (s *Set) replaceAll(fn string, re *regexp.Regexp, src, repl string, literal bool) (string, error) {
	if err := s.m.Fits(fn, replaceBound(re, src, repl, literal)); err != nil {
		return "", err
	}
	if literal {
		return s.produced(fn, re.ReplaceAllLiteralString(src, repl))
	}
	return s.produced(fn, re.ReplaceAllString(src, repl))
}

// sortAlpha is sprig's sortAlpha on a copy of a []string: sprig sorts a
// []string in place, which would change a list other values share.
func (s *Set) sortAlpha(list any) ([]string, error) {
	if err := s.m.Charge("sortAlpha", listLen(list)*slotSize); err != nil {
		return nil, err
	}
	if l, ok := list.([]string); ok {
		list = slices.Clone(l)
	}
	return sprigSortAlpha(list), nil
}
