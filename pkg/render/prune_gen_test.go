package render

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// pruneGen writes random template text for FuzzPruneRandomTemplates. It
// keeps track of the variables in scope so that what it writes parses.
type pruneGen struct {
	rnd      *rand.Rand
	vars     []string // variables in scope, innermost last
	dicts    []string // those declared as a dict
	declared int      // variables declared so far, to name the next one
	ranges   int      // ranges around what is written (break, continue)
	snippet  bool     // writing the snippet, whose $ is its dot: no store, no calls of itself
}

// n is a random number in [0, k).
func (g *pruneGen) n(k int) int { return g.rnd.IntN(k) }

// oneOf is one of s at random.
func (g *pruneGen) oneOf(s ...string) string { return s[g.n(len(s))] }

// key is a random field name.
func (g *pruneGen) key() string { return g.oneOf(pruneFuzzKeys...) }

// fresh declares a new variable, in scope to the end of the block being
// written, and returns its name.
func (g *pruneGen) fresh() string {
	g.declared++
	v := "$v" + strconv.Itoa(g.declared)
	g.vars = append(g.vars, v)
	return v
}

// variable is a variable in scope ($ when none is).
func (g *pruneGen) variable() string {
	if len(g.vars) == 0 {
		return "$"
	}
	return g.vars[g.n(len(g.vars))]
}

// block writes what write writes with its own scope, as if, with and
// range have (their pipeline included): the variables it declares go out
// of scope after it.
func (g *pruneGen) block(write func() string) string {
	vars, dicts := len(g.vars), len(g.dicts)
	defer func() { g.vars, g.dicts = g.vars[:vars], g.dicts[:dicts] }()
	return write()
}

// leaf is an expression without arguments: dot, a string, a variable or
// a field chain of one or two steps from one (or from dot).
func (g *pruneGen) leaf() string {
	switch g.n(5) {
	case 0:
		return "."
	case 1:
		if g.n(3) == 0 {
			return `"lit"`
		}
		return g.variable()
	}
	s := g.variable()
	for range 1 + g.n(2) {
		s += "." + g.key()
	}
	if rest, ok := strings.CutPrefix(s, "$."); ok {
		return "." + rest // dot's field, not the root's
	}
	return s
}

// pruneExprForms are the forms of an expression with arguments; arg
// writes an argument.
var pruneExprForms = []func(g *pruneGen, arg func() string) string{
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(index %s %q)`, arg(), g.key()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(index %s 0)`, arg()) },
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(index %s %q %q)`, arg(), g.key(), g.key())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(index %s %s)`, arg(), g.variable()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(get %s %q)`, arg(), g.key()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(hasKey %s %q)`, arg(), g.key()) },
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(hasKey %s (toString %s))`, arg(), arg())
	},
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(dig %q %q "d" %s)`, g.key(), g.key(), arg())
	},
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(field %s "spec.%s")`, arg(), g.key())
	},
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(field %s "spec.l[0].%s")`, arg(), g.key())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(%s).%s`, arg(), g.key()) },
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(dict %q %s %q %s)`, g.key(), arg(), g.key(), arg())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(list %s %s)`, arg(), arg()) },
	func(g *pruneGen, arg func() string) string {
		if len(g.dicts) == 0 {
			return arg()
		}
		return fmt.Sprintf(`(set %s %q %s)`, g.dicts[g.n(len(g.dicts))], g.key(), arg())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(default %s %s)`, arg(), arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(and %s %s)`, arg(), arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(or %s %s)`, arg(), arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(not %s)`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(empty %s)`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(eq (kindOf %s) "map")`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(each %s)`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(tuple %s %s)`, arg(), arg()) },
	// Pipelines: the value before | is the last argument.
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(%s | %s %s)`, arg(), g.oneOf("default", "and", "or", "list"), arg())
	},
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(%s | %s)`, arg(), g.oneOf("not", "each", "toJson", "empty", "kindOf"))
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(%q | index %s)`, g.key(), arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(%q | hasKey %s)`, g.key(), arg()) },
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`("spec.%s" | field %s)`, g.key(), arg())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(%s | dict %q)`, arg(), g.key()) },
	func(g *pruneGen, arg func() string) string {
		if len(g.dicts) == 0 {
			return arg()
		}
		return fmt.Sprintf(`(%s | set %s %q)`, arg(), g.dicts[g.n(len(g.dicts))], g.key())
	},
	// A declaration or assignment in parentheses: the variable is in
	// scope to the end of the enclosing block.
	func(g *pruneGen, arg func() string) string {
		value := arg()
		if v, ok := g.assignable(); ok && g.n(3) == 0 {
			return fmt.Sprintf(`(%s = %s)`, v, value)
		}
		return fmt.Sprintf(`(%s := %s)`, g.fresh(), value)
	},
}

// pruneMainExprForms are more forms, of haproxy.cfg only: they read the
// store (in the snippet, $ is its dot) or call the snippet.
var pruneMainExprForms = []func(g *pruneGen, arg func() string) string{
	func(g *pruneGen, arg func() string) string { return `$.resources.things.List` },
	func(g *pruneGen, arg func() string) string { return `($.resources.things.Get "ns" "a")` },
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`($.resources.things.Get "ns" (toString %s))`, arg())
	},
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(include "snip" %s)`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(%s | include "snip")`, arg()) },
	func(g *pruneGen, arg func() string) string { return fmt.Sprintf(`(includeValue "val" %s)`, arg()) },
	// addFile with an owner (named in the source map), one file per object.
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(addFile "file" (printf "f%%d-%%s" %d $i.metadata.name) (toJson %s) %s)`, g.n(1000), arg(), arg())
	},
	func(g *pruneGen, arg func() string) string {
		return fmt.Sprintf(`(include "snip" (dict "a" %s "b" %s))`, arg(), arg())
	},
}

// expr is a random expression whose arguments nest at most depth deep.
func (g *pruneGen) expr(depth int) string {
	if depth <= 0 || g.n(6) == 0 {
		return g.leaf()
	}
	forms := pruneExprForms
	if !g.snippet {
		forms = slices.Concat(forms, pruneMainExprForms)
	}
	form := forms[g.n(len(forms))]
	return form(g, func() string { return g.expr(depth - 1) })
}

// assignable is a variable in scope that may be assigned: not $i, so that
// the loop's object stays what most of the template reads, nor a dict the
// template sets.
func (g *pruneGen) assignable() (string, bool) {
	var vs []string
	for _, v := range g.vars {
		if v != "$i" && !slices.Contains(g.dicts, v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[g.n(len(vs))], true
}

// stmts is count random statements nesting at most depth blocks deep.
func (g *pruneGen) stmts(depth, count int) string {
	var b strings.Builder
	for range count {
		b.WriteString(g.stmt(depth))
	}
	return b.String()
}

// stmt is a random statement nesting at most depth blocks deep.
func (g *pruneGen) stmt(depth int) string {
	if depth > 0 && g.n(2) == 0 {
		return g.control(depth)
	}
	if g.ranges > 0 && g.n(8) == 0 {
		return g.jump()
	}
	switch g.n(10) {
	case 0:
		value := g.expr(2)
		return fmt.Sprintf(`{{ %s := %s }}`, g.fresh(), value)
	case 1:
		if v, ok := g.assignable(); ok {
			return fmt.Sprintf(`{{ %s = %s }}`, v, g.expr(1))
		}
		return fmt.Sprintf(`{{ %s := %s }}`, g.fresh(), g.expr(1))
	case 2:
		v := g.fresh()
		g.dicts = append(g.dicts, v)
		return fmt.Sprintf(`{{ %s := dict }}`, v)
	case 3:
		value := g.expr(1)
		return fmt.Sprintf(`{{ $_ := list (%s := %s) }}`, g.fresh(), value)
	case 4:
		if g.snippet {
			return fmt.Sprintf(`[{{ toJson %s }}]`, g.expr(2))
		}
		return fmt.Sprintf(`{{ template "snip" %s }}`, g.expr(2))
	case 5:
		return fmt.Sprintf(`[{{ kindOf %s }}]`, g.expr(2))
	case 6, 7:
		return fmt.Sprintf(`[{{ toJson %s }}]`, g.expr(2))
	case 8:
		return fmt.Sprintf(`{{ $_ := %s }}`, g.expr(3))
	default:
		return fmt.Sprintf(`[{{ len %s }}]`, g.expr(1))
	}
}

// control is a random if, with or range whose body nests at most depth
// blocks deep (break and continue among its statements in a range).
func (g *pruneGen) control(depth int) string {
	return g.block(func() string {
		var head string
		isRange := false
		switch g.n(10) {
		case 0, 1:
			head = "if " + g.expr(2)
		case 2:
			value := g.expr(1)
			head = fmt.Sprintf(`if dict "a" (%s := %s)`, g.fresh(), value)
		case 3:
			head = "with " + g.expr(2)
		case 4:
			value := g.expr(2)
			head = fmt.Sprintf("with %s := %s", g.fresh(), value)
		default:
			head, isRange = g.rangeHead(), true
		}
		body := g.body(depth, isRange)
		if g.n(3) == 0 {
			body += "{{ else }}" + g.stmts(depth-1, 1)
		}
		return "{{ " + head + " }}" + body + "{{ end }}"
	})
}

// rangeHead is the head of a range: over dot, into one or two new
// variables, or assigning one or two in scope.
func (g *pruneGen) rangeHead() string {
	value := g.expr(2)
	switch g.n(5) {
	case 0:
		return "range " + value
	case 1:
		return fmt.Sprintf("range %s := %s", g.fresh(), value)
	case 2:
		k := g.fresh()
		return fmt.Sprintf("range %s, %s := %s", k, g.fresh(), value)
	case 3:
		if v, ok := g.assignable(); ok {
			return fmt.Sprintf("range %s = %s", v, value)
		}
	default:
		k, okK := g.assignable()
		v, okV := g.assignable()
		if okK && okV {
			return fmt.Sprintf("range %s, %s = %s", k, v, value)
		}
	}
	return fmt.Sprintf("range %s := %s", g.fresh(), value)
}

// body is the body of a block: two statements, which may break or
// continue in a range.
func (g *pruneGen) body(depth int, inRange bool) string {
	if inRange {
		g.ranges++
		defer func() { g.ranges-- }()
	}
	return g.stmts(depth-1, 2)
}

// jump is a break or continue, alone or under an if.
func (g *pruneGen) jump() string {
	jump := g.oneOf("{{ break }}", "{{ continue }}")
	if g.n(2) == 0 {
		return jump
	}
	return g.block(func() string { return "{{ if " + g.expr(1) + " }}" + jump + "{{ end }}" })
}
