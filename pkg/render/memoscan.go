package render

import (
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// memoRange is what New found about one range over .resources.<key>.Each or
// each whose iterations can be replayed (see memo.go): its body reads
// shared maps (maps built before the range, reachable from variables
// declared outside it) only as the map argument of get, hasKey, set and
// unset, which journal what they read and write, and holds no break or
// continue.
type memoRange struct {
	id int
	// elems is how many element values memoEnter receives: the range's
	// variables, or its dot when it declares none.
	elems int
	// outer names the variables declared outside the body that it uses or
	// assigns ("$" included), in the order memoEnter receives their values.
	outer []string
	// native reports that outer[i] is read other than as the map argument
	// of a journaled function: its value is part of the iteration's key.
	native []bool
	// assigned lists the indexes in outer of the variables the body assigns.
	assigned []int
}

// journaled are the functions whose map argument (their first) may be a
// shared map: they record what they read and write while an iteration is
// recorded. get, set and unset return a map (possibly shared); hasKey a
// bool.
var journaled = map[string]bool{"get": true, "hasKey": true, "set": true, "unset": true}

// mapResult reports whether a journaled function returns its map or one
// of its values (a possibly shared map).
func mapResult(fn string) bool { return fn != "hasKey" }

// Names of the functions the rewritten ranges call. They are added to the
// template set after parsing, so templates cannot call them.
const (
	memoEnterFunc = "htcMemoEnter"
	memoLeaveFunc = "htcMemoLeave"
	memoOutFunc   = "htcMemoOut"
	memoRangeFunc = "htcMemoRange"
	memoSyncFunc  = "htcMemoSync"
	memoDoneFunc  = "htcMemoDone"
)

// planMemo finds the memoizable ranges of every template of root and
// rewrites each: its body runs only when memoEnter says the iteration
// cannot be replayed, and records it (memoLeave); otherwise the assigned
// outer variables take their replayed values (memoOut). It returns the
// ranges by id and how many ranges iterate over Each or each.
func planMemo(root *template.Template) (_ []*memoRange, loops int, _ error) {
	type found struct {
		r  *parse.RangeNode
		mr *memoRange
	}
	var all []found
	for _, t := range sortedTemplates(root) {
		if t.Tree == nil {
			continue
		}
		walkRanges(t.Tree.Root, func(r *parse.RangeNode) {
			if iteratesEach(r.Pipe) {
				loops++
			}
			if mr := analyzeRange(r); mr != nil {
				mr.id = len(all)
				all = append(all, found{r, mr})
			}
		})
	}
	out := make([]*memoRange, 0, len(all))
	after := map[*parse.RangeNode][]parse.Node{}
	for _, f := range all {
		done, err := rewriteRange(f.r, f.mr)
		if err != nil {
			return nil, 0, err
		}
		if len(done) > 0 {
			after[f.r] = done
		}
		out = append(out, f.mr)
	}
	// What follows a wrapped range, once every range is rewritten (a
	// nested range's list is then its place in the rewritten body).
	for _, t := range sortedTemplates(root) {
		if t.Tree != nil {
			insertAfter(t.Tree.Root, after)
		}
	}
	for r := range after {
		return nil, 0, fmt.Errorf("internal: memo rewrite: range at %d not found", r.Pos)
	}
	return out, loops, nil
}

// insertAfter inserts after[r] after every range r under n that has an
// entry, and deletes the entry.
func insertAfter(n parse.Node, after map[*parse.RangeNode][]parse.Node) {
	var list func(l *parse.ListNode)
	list = func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for i := 0; i < len(l.Nodes); i++ {
			switch x := l.Nodes[i].(type) {
			case *parse.RangeNode:
				list(x.List)
				list(x.ElseList)
				if nodes, ok := after[x]; ok {
					delete(after, x)
					l.Nodes = slices.Insert(l.Nodes, i+1, nodes...)
					i += len(nodes)
				}
			case *parse.IfNode:
				list(x.List)
				list(x.ElseList)
			case *parse.WithNode:
				list(x.List)
				list(x.ElseList)
			}
		}
	}
	if l, ok := n.(*parse.ListNode); ok {
		list(l)
	}
}

// walkRanges calls fn with every range node under n, outer ones first.
func walkRanges(n parse.Node, fn func(*parse.RangeNode)) {
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return
		}
		for _, c := range x.Nodes {
			walkRanges(c, fn)
		}
	case *parse.RangeNode:
		fn(x)
		walkRanges(x.List, fn)
		walkRanges(x.ElseList, fn)
	case *parse.IfNode:
		walkRanges(x.List, fn)
		walkRanges(x.ElseList, fn)
	case *parse.WithNode:
		walkRanges(x.List, fn)
		walkRanges(x.ElseList, fn)
	}
}

// iteratesEach reports whether a range's pipeline is a single call of a
// method or field named Each (a store's, as in .resources.ingresses.Each)
// or of each. (Replaying does not depend on what is iterated over: this
// only picks the loops worth recording.)
func iteratesEach(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) == 0 {
		return false
	}
	switch f := p.Cmds[0].Args[0].(type) {
	case *parse.IdentifierNode:
		return f.Ident == "each"
	case *parse.FieldNode:
		return f.Ident[len(f.Ident)-1] == "Each"
	case *parse.VariableNode:
		return len(f.Ident) > 1 && f.Ident[len(f.Ident)-1] == "Each"
	case *parse.ChainNode:
		return len(f.Field) > 0 && f.Field[len(f.Field)-1] == "Each"
	}
	return false
}

// analyzeRange returns the plan of r when its iterations can be memoized,
// else nil.
func analyzeRange(r *parse.RangeNode) *memoRange {
	if !iteratesEach(r.Pipe) || r.List == nil || len(r.Pipe.Decl) > 2 || r.Pipe.IsAssign {
		return nil // range $i = ... assigns outer variables
	}
	b := &bodyScan{index: map[string]int{}, derived: map[string]bool{}, declared: map[string]bool{}, ok: true}
	elems := map[string]bool{}
	for _, v := range r.Pipe.Decl {
		elems[v.Ident[0]] = true
	}
	// Which local variables hold values journaled functions returned:
	// repeat until no assignment adds one.
	for grew := true; grew && b.ok; {
		grew = false
		b.check = false
		b.list(newScopes(elems), r.List)
		for name := range b.newDerived {
			if !b.derived[name] {
				b.derived[name], grew = true, true
			}
		}
	}
	if !b.ok {
		return nil
	}
	b.check = true
	b.list(newScopes(elems), r.List)
	if !b.ok {
		return nil
	}
	mr := &memoRange{elems: max(1, len(r.Pipe.Decl)), outer: b.outer, native: b.native}
	for i, name := range b.outer {
		if b.assigned[i] {
			if b.declared[name] {
				return nil // at the body's end the name may be a local
			}
			mr.assigned = append(mr.assigned, i)
		}
	}
	return mr
}

// scopes is the stack of variable scopes inside a range body: a name
// found in none of them is an outer variable.
type scopes []map[string]bool

func newScopes(elems map[string]bool) scopes {
	s := map[string]bool{}
	for k := range elems {
		s[k] = true
	}
	return scopes{s}
}

func (s scopes) local(name string) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i][name] {
			return true
		}
	}
	return false
}

// bodyScan checks one range body (see analyzeRange).
type bodyScan struct {
	ok    bool
	check bool // second pass: classify uses
	// outer variables, in first-use order, with how they are used.
	outer    []string
	index    map[string]int
	native   []bool
	assigned []bool
	// derived names local variables that may hold a value a journaled
	// function returned; newDerived collects them during a pass.
	derived    map[string]bool
	newDerived map[string]bool
	// declared holds every name the body declares anywhere.
	declared map[string]bool
}

func (b *bodyScan) outerVar(name string) int {
	i, ok := b.index[name]
	if !ok {
		i = len(b.outer)
		b.index[name] = i
		b.outer = append(b.outer, name)
		b.native = append(b.native, false)
		b.assigned = append(b.assigned, false)
	}
	return i
}

func (b *bodyScan) list(sc scopes, l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		if !b.ok {
			return
		}
		switch x := n.(type) {
		case *parse.ActionNode:
			d := destOutput
			if len(x.Pipe.Decl) > 0 {
				d = destDecl
			}
			b.pipe(sc, x.Pipe, d)
		case *parse.IfNode:
			b.branch(sc, &x.BranchNode)
		case *parse.WithNode:
			b.branch(sc, &x.BranchNode)
		case *parse.RangeNode:
			b.branch(sc, &x.BranchNode)
		case *parse.TemplateNode:
			b.pipe(sc, x.Pipe, destNative)
		case *parse.BreakNode, *parse.ContinueNode:
			b.ok = false
		case *parse.TextNode, *parse.CommentNode:
		default:
			b.ok = false
		}
	}
}

// branch scans if, with and range: the pipeline's variables are seen by
// both branches, what one branch declares is not seen by the other.
func (b *bodyScan) branch(sc scopes, br *parse.BranchNode) {
	inner := append(sc[:len(sc):len(sc)], map[string]bool{})
	b.pipe(inner, br.Pipe, destNative)
	b.list(append(inner[:len(inner):len(inner)], map[string]bool{}), br.List)
	b.list(append(inner[:len(inner):len(inner)], map[string]bool{}), br.ElseList)
}

// dest is where a pipeline's or command's value goes.
type dest int

const (
	destNative  dest = iota // used as a value: a shared map may not get there
	destOutput              // printed
	destJournal             // the map argument of a journaled function
	destDecl                // declared or assigned to variables
)

// pipe scans a pipeline whose value goes to d: destDecl only for an action
// that declares or assigns; the pipeline of if, with, range and template
// uses its value (truth, dot, iteration) even when it declares variables.
func (b *bodyScan) pipe(sc scopes, p *parse.PipeNode, d dest) {
	if p == nil {
		return
	}
	derives := false
	for i, c := range p.Cmds {
		cd := d
		if i < len(p.Cmds)-1 {
			cd = destNative // the next command's last argument
		}
		if b.command(sc, c, cd) && i == len(p.Cmds)-1 {
			derives = true
		}
	}
	for _, v := range p.Decl {
		name := v.Ident[0]
		switch {
		case !p.IsAssign:
			sc[len(sc)-1][name] = true
		case !sc.local(name):
			// The iteration's effect on it depends on its value before
			// (the body may not assign it): keyed like a value it reads.
			i := b.outerVar(name)
			b.assigned[i], b.native[i] = true, true
			if derives {
				b.ok = false // an outer variable would hold a shared map
			}
		}
		if !p.IsAssign {
			b.declared[name] = true
		}
		if derives && sc.local(name) {
			if b.newDerived == nil {
				b.newDerived = map[string]bool{}
			}
			b.newDerived[name] = true
		}
	}
}

// command scans a command whose value goes to d; it reports whether the
// command is a journaled function returning a possibly shared map.
func (b *bodyScan) command(sc scopes, c *parse.CommandNode, d dest) bool {
	fn := ""
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		fn = id.Ident
	}
	shared := false
	for i, a := range c.Args {
		ad := destNative
		if journaled[fn] && i == 1 {
			ad = destJournal
		}
		if i == 0 && fn != "" {
			continue
		}
		if b.arg(sc, a, ad) && ad == destJournal {
			shared = true
		}
	}
	derives := shared && mapResult(fn)
	if derives && d != destDecl && d != destJournal && b.check {
		b.ok = false // a shared map would be used as a value
	}
	return derives
}

// arg scans one argument going to d; it reports whether it may be a
// shared map (an outer or derived variable, or a journaled call on one).
func (b *bodyScan) arg(sc scopes, n parse.Node, d dest) bool {
	switch x := n.(type) {
	case *parse.VariableNode:
		name := x.Ident[0]
		journal := d == destJournal && len(x.Ident) == 1
		if sc.local(name) {
			if b.derived[name] && !journal && b.check {
				b.ok = false
			}
			return b.derived[name]
		}
		if b.check {
			i := b.outerVar(name)
			if !journal {
				b.native[i] = true
			}
		}
		return true
	case *parse.PipeNode:
		return b.parenthesized(sc, x, d)
	case *parse.ChainNode:
		if p, ok := x.Node.(*parse.PipeNode); ok {
			b.parenthesized(sc, p, destNative)
		} else {
			b.arg(sc, x.Node, destNative)
		}
	}
	return false
}

// parenthesized scans a parenthesized pipeline used as an argument.
func (b *bodyScan) parenthesized(sc scopes, p *parse.PipeNode, d dest) bool {
	if len(p.Decl) > 0 {
		b.ok = false
		return false
	}
	derives := false
	for i, c := range p.Cmds {
		cd := d
		if i < len(p.Cmds)-1 {
			cd = destNative
		}
		if b.command(sc, c, cd) && i == len(p.Cmds)-1 {
			derives = true
		}
	}
	return derives
}

// rewriteRange replaces r's body B by
//
//	{{ if htcMemoEnter ID ELEMS... OUTER... }}B{{ htcMemoLeave ID ASSIGNED... }}
//	{{ else }}{{ $v = htcMemoOut ID i $v }}...{{ end }}
//
// built by parsing that text with the variables declared, then grafting B.
// A range without an else branch is also wrapped (memoloop.go): its
// pipeline P becomes htcMemoRange ID (P) OUTER..., its body starts with
// {{ $v = htcMemoSync ID i $v }} for each assigned variable, and done
// holds the {{ $v = htcMemoDone ID i $v }} to put after the range. (An
// else branch runs when the range yields nothing, which a range whose
// iterations all replayed would.)
func rewriteRange(r *parse.RangeNode, mr *memoRange) (done []parse.Node, _ error) {
	var decls strings.Builder
	declared := map[string]bool{"$": true}
	declare := func(name string) {
		if !declared[name] {
			declared[name] = true
			fmt.Fprintf(&decls, "{{ %s := 0 }}", name)
		}
	}
	elems := []string{"."}
	if len(r.Pipe.Decl) > 0 {
		elems = elems[:0]
		for _, v := range r.Pipe.Decl {
			elems = append(elems, v.Ident[0])
		}
	}
	for _, name := range append(elems, mr.outer...) {
		if name != "." {
			declare(name)
		}
	}
	var src strings.Builder
	fmt.Fprintf(&src, "{{ if %s %d %s %s }}{{ %s %d", memoEnterFunc, mr.id,
		strings.Join(elems, " "), strings.Join(mr.outer, " "), memoLeaveFunc, mr.id)
	for _, i := range mr.assigned {
		fmt.Fprintf(&src, " %s", mr.outer[i])
	}
	src.WriteString(" }}{{ else }}")
	for _, i := range mr.assigned {
		fmt.Fprintf(&src, "{{ %s = %s %d %d %s }}", mr.outer[i], memoOutFunc, mr.id, i, mr.outer[i])
	}
	src.WriteString("{{ end }}")
	nodes, err := parseMemo(decls.String(), src.String())
	if err != nil {
		return nil, err
	}
	ifNode, ok := nodes[len(nodes)-1].(*parse.IfNode)
	if !ok {
		return nil, fmt.Errorf("internal: memo rewrite of %q: no if node", src.String())
	}
	body := r.List.Nodes
	ifNode.List.Nodes = append(append([]parse.Node{}, body...), ifNode.List.Nodes...)
	r.List.Nodes = []parse.Node{ifNode}
	if r.ElseList != nil {
		return nil, nil
	}

	// The wrapper: htcMemoRange ID 0 OUTER..., its 0 replaced by (P).
	nodes, err = parseMemo(decls.String(), fmt.Sprintf("{{ %s %d 0 %s }}", memoRangeFunc, mr.id, strings.Join(mr.outer, " ")))
	if err != nil {
		return nil, err
	}
	action, ok := nodes[len(nodes)-1].(*parse.ActionNode)
	if !ok || len(action.Pipe.Cmds) != 1 || len(action.Pipe.Cmds[0].Args) < 3 {
		return nil, fmt.Errorf("internal: memo rewrite of range %d: no wrapper call", mr.id)
	}
	inner := *r.Pipe
	inner.Decl, inner.IsAssign = nil, false
	wrapper := action.Pipe.Cmds[0]
	wrapper.Args[2] = &inner
	sync := func(fn string) ([]parse.Node, error) {
		var src strings.Builder
		for _, i := range mr.assigned {
			fmt.Fprintf(&src, "{{ %s = %s %d %d %s }}", mr.outer[i], fn, mr.id, i, mr.outer[i])
		}
		nodes, err := parseMemo(decls.String(), src.String())
		if err != nil {
			return nil, err
		}
		return nodes[len(nodes)-len(mr.assigned):], nil
	}
	start, err := sync(memoSyncFunc)
	if err != nil {
		return nil, err
	}
	if done, err = sync(memoDoneFunc); err != nil {
		return nil, err
	}
	r.Pipe.Cmds = []*parse.CommandNode{wrapper}
	r.List.Nodes = append(start, r.List.Nodes...)
	return done, nil
}

// parseMemo parses the text a rewrite grafts, after decls (the
// declarations of the variables it uses), and returns its nodes.
func parseMemo(decls, src string) ([]parse.Node, error) {
	stub := func(...any) any { return nil }
	funcs := template.FuncMap{memoEnterFunc: stub, memoLeaveFunc: stub, memoOutFunc: stub,
		memoRangeFunc: stub, memoSyncFunc: stub, memoDoneFunc: stub}
	t, err := template.New("memo").Funcs(funcs).Parse(decls + src)
	if err != nil {
		return nil, fmt.Errorf("internal: memo rewrite of %q: %w", src, err)
	}
	return t.Tree.Root.Nodes, nil
}
