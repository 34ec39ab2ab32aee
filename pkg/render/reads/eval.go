package reads

import (
	"text/template/parse"

	"github.com/haproxy-template/htc/pkg/store"
)

// list scans the nodes of a template body with dot as its dot. Variables
// declared in it go out of scope at its end.
func (s *readScan) list(sc *scope, dot *absValue, l *parse.ListNode) {
	if l == nil {
		return
	}
	mark := len(sc.vars)
	defer func() { sc.vars = sc.vars[:mark] }()
	for _, n := range l.Nodes {
		s.node1(sc, dot, n)
	}
}

// node1 scans one node of a template body.
func (s *readScan) node1(sc *scope, dot *absValue, n parse.Node) {
	switch x := n.(type) {
	case *parse.ActionNode:
		v := s.pipe(sc, dot, x.Pipe, true)
		if len(x.Pipe.Decl) == 0 {
			s.use(v) // printed
		}
	case *parse.IfNode:
		s.branch(sc, dot, &x.BranchNode, false, false)
	case *parse.WithNode:
		s.branch(sc, dot, &x.BranchNode, true, false)
	case *parse.RangeNode:
		s.branch(sc, dot, &x.BranchNode, false, true)
	case *parse.TemplateNode:
		var v *absValue
		if x.Pipe != nil {
			v = s.pipe(sc, dot, x.Pipe, true)
		}
		s.called(x.Name, v)
		s.ran(x.Name)
	case *parse.ListNode:
		s.list(sc, dot, x)
	case *parse.TextNode, *parse.CommentNode, *parse.BreakNode, *parse.ContinueNode:
		// read nothing
	default:
		s.everything = true // a node the scan does not know: fail closed, as tree.Walk does
	}
}

// branch scans if, with and range: the pipeline's value is tested (see
// test), except that range uses only what it iterates (see element); with
// makes it the dot, range makes each element the dot.
func (s *readScan) branch(sc *scope, dot *absValue, b *parse.BranchNode, with, rng bool) {
	mark := len(sc.vars)
	defer func() { sc.vars = sc.vars[:mark] }()
	v := s.pipe(sc, dot, b.Pipe, !rng)
	body := dot
	switch {
	case rng:
		body = s.element(v)
		s.declareRange(sc, b.Pipe, v, body)
	case with:
		s.test(v)
		body = v
	default:
		s.test(v)
	}
	s.list(sc, body, b.List)
	s.list(sc, dot, b.ElseList)
}

// declareRange binds range's variables: $key (nothing from the stores: a
// field is read whole when ranged over) and $element. A range that
// assigns ({{ range $k, $v = ... }}) sets the variables in scope instead,
// as text/template does: each to the pipeline's value, then to each key
// and element; they keep the last after the loop.
func (s *readScan) declareRange(sc *scope, p *parse.PipeNode, ranged, elem *absValue) {
	for i, d := range p.Decl {
		v := &absValue{}
		if i == len(p.Decl)-1 {
			v = elem
		}
		if p.IsAssign {
			grewRanged := s.assign(sc, d.Ident[0], ranged)
			if grewElem := s.assign(sc, d.Ident[0], v); grewRanged || grewElem {
				s.grew = true
			}
			continue
		}
		s.declare(sc, p, i, d.Ident[0], v)
	}
}

// declare binds variable name, declared by p's i-th declaration, to v.
func (s *readScan) declare(sc *scope, p *parse.PipeNode, i int, name string, v *absValue) {
	slot := s.vars[varSite{p, i}]
	if slot == nil {
		slot = &absValue{}
		s.vars[varSite{p, i}] = slot
		s.grew = true
	}
	if slot.join(v) {
		s.grew = true
	}
	sc.vars = append(sc.vars, binding{name, slot})
}

// pipe scans a pipeline and returns its value; with bind, it also
// declares or assigns its variables.
func (s *readScan) pipe(sc *scope, dot *absValue, p *parse.PipeNode, bind bool) *absValue {
	if p == nil {
		return &absValue{}
	}
	var v *absValue
	for i, c := range p.Cmds {
		var final *absValue
		if i > 0 {
			final = v
		}
		v = s.command(sc, dot, c, final)
	}
	if v == nil {
		v = &absValue{}
	}
	if !bind {
		return v
	}
	for i, d := range p.Decl {
		if p.IsAssign {
			if s.assign(sc, d.Ident[0], v) {
				s.grew = true
			}
			continue
		}
		s.declare(sc, p, i, d.Ident[0], v)
	}
	return v
}

// assign joins v into the variable in scope called name.
func (s *readScan) assign(sc *scope, name string, v *absValue) bool {
	for i := len(sc.vars) - 1; i >= 0; i-- {
		if sc.vars[i].name == name {
			return sc.vars[i].v.join(v)
		}
	}
	return false
}

// command scans one command of a pipeline; final is the previous
// command's value (nil for the first).
func (s *readScan) command(sc *scope, dot *absValue, c *parse.CommandNode, final *absValue) *absValue {
	if len(c.Args) == 0 {
		return &absValue{}
	}
	rest := c.Args[1:]
	args := make([]*absValue, 0, len(rest)+1)
	for _, a := range rest {
		args = append(args, s.arg(sc, dot, a))
	}
	if final != nil {
		args = append(args, final)
	}
	switch x := c.Args[0].(type) {
	case *parse.IdentifierNode:
		return s.call(c, x.Ident, rest, args)
	case *parse.FieldNode:
		return s.chain(dot, x.Ident, args)
	case *parse.VariableNode:
		return s.chain(sc.lookup(x.Ident[0]), x.Ident[1:], args)
	case *parse.ChainNode:
		return s.chain(s.arg(sc, dot, x.Node), x.Field, args)
	}
	for _, a := range args {
		s.use(a) // a literal, dot or (pipeline) given arguments: an error
	}
	return s.arg(sc, dot, c.Args[0])
}

// arg scans one argument of a command.
func (s *readScan) arg(sc *scope, dot *absValue, n parse.Node) *absValue {
	switch x := n.(type) {
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return s.chain(dot, x.Ident, nil)
	case *parse.VariableNode:
		return s.chain(sc.lookup(x.Ident[0]), x.Ident[1:], nil)
	case *parse.ChainNode:
		return s.chain(s.arg(sc, dot, x.Node), x.Field, nil)
	case *parse.PipeNode:
		// A variable declared in parentheses stays in scope to the end
		// of the enclosing if, with, range or template, as in
		// text/template: list and branch end it.
		return s.pipe(sc, dot, x, true)
	case *parse.IdentifierNode:
		return s.call(x, x.Ident, nil, nil) // a function without arguments
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return &absValue{}
	}
	s.everything = true // a node the scan does not know: fail closed, as tree.Walk does
	return &absValue{}
}

// constString returns the value of n when it is a string literal.
func constString(n parse.Node) (string, bool) {
	if x, ok := n.(*parse.StringNode); ok {
		return x.Text, true
	}
	return "", false
}

// call scans a call of function name at site with the argument nodes
// nodes (the pipeline's previous value, when there is one, is the last of
// args but has no node), by the function's rule (rules.go). A function
// without a rule makes the scan give up.
func (s *readScan) call(site parse.Node, name string, nodes []parse.Node, args []*absValue) *absValue {
	r := rules[name]
	if r == nil {
		s.everything = true
		return &absValue{}
	}
	c := callSite{site: site, nodes: nodes, args: args}
	if v := r(s, c); v != nil {
		return v
	}
	return usesArgs(s, c)
}

// callSite is one function call: where it is, its argument nodes and
// their values (see call).
type callSite struct {
	site  parse.Node
	nodes []parse.Node
	args  []*absValue
}

// constArg returns argument i when it is a string literal.
func (c callSite) constArg(i int) (string, bool) {
	if i < len(c.nodes) {
		return constString(c.nodes[i])
	}
	return "", false
}

// dict scans dict K1 V1 K2 V2...: a built map holding each value under
// its key (any key when it is not a constant; the key is then used).
func (s *readScan) dict(c callSite) *absValue {
	n := s.node(c.site)
	for i := 0; i+1 < len(c.args); i += 2 {
		k, isConst := c.constArg(i)
		if !isConst {
			s.use(c.args[i])
		}
		s.setIn(n, k, isConst, c.args[i+1])
	}
	if len(c.args)%2 == 1 {
		s.use(c.args[len(c.args)-1])
	}
	return &absValue{nodes: set(n)}
}

// include scans include NAME DOT: the template runs with DOT (what it
// prints is used there); a name computed at render time could be any
// template, so the scan gives up. Nil when the call is malformed.
func (s *readScan) include(c callSite) *absValue {
	if len(c.args) == 0 {
		return nil
	}
	t, ok := c.constArg(0)
	if !ok {
		s.everything = true
		return &absValue{}
	}
	var dot *absValue
	if len(c.args) > 1 {
		dot = c.args[1]
	}
	for _, a := range c.args[2:] {
		s.use(a)
	}
	s.called(t, dot)
	return &absValue{}
}

// includeValue scans includeValue NAME DOT: the template runs as with
// include, and the call returns what result may give in it (returnedBy).
// A name computed at render time could be any template: the scan gives
// up, as include does.
func (s *readScan) includeValue(c callSite) *absValue {
	if s.include(c) == nil {
		return nil
	}
	name, ok := c.constArg(0)
	if !ok {
		return &absValue{}
	}
	return s.returnedBy(name)
}

// fragmentsCall scans fragments NAME ITEMS: NAME runs with a dot holding
// an element of ITEMS (a store's objects, a list's elements, a dict's
// values) as item, the store handles and extraContext. A name computed at
// render time could be any template, so the scan gives up. Nil when the
// call is malformed.
func (s *readScan) fragmentsCall(c callSite) *absValue {
	if len(c.args) != 2 {
		return nil
	}
	name, ok := c.constArg(0)
	if !ok {
		s.everything = true
		return &absValue{}
	}
	items := &absValue{origins: c.args[1].origins, nodes: c.args[1].nodes, resources: c.args[1].resources}
	for h := range c.args[1].handles {
		items.join(&absValue{origins: set(origin{store: h, coll: true})})
	}
	dot := s.node(c.site)
	s.setIn(dot, "item", true, s.element(items))
	s.setIn(dot, "key", true, &absValue{})
	s.setIn(dot, "resources", true, &absValue{resources: true})
	s.setIn(dot, "extraContext", true, &absValue{})
	s.called(name, &absValue{nodes: set(dot)})
	return &absValue{}
}

// fieldCall scans field OBJ PATH with a constant PATH: the value at PATH
// is used. Nil otherwise (every argument is then used).
func (s *readScan) fieldCall(c callSite) *absValue {
	if len(c.args) != 2 {
		return nil
	}
	p, ok := c.constArg(1)
	if !ok {
		return nil
	}
	fp, err := store.ParseFieldPath(p)
	if err != nil {
		return nil
	}
	s.use(s.chain(c.args[0], fp.Fields(), nil))
	// Its errors name OBJ by its kind, namespace and name: read them
	// where OBJ is not a stored object (which always keeps them).
	parts := &absValue{nodes: c.args[0].nodes}
	for o := range c.args[0].origins {
		if o.path != "" && !o.coll {
			parts.join(&absValue{origins: set(o)})
		}
	}
	for _, id := range [][]string{{"kind"}, {"metadata", "namespace"}, {"metadata", "name"}} {
		s.use(s.chain(parts, id, nil))
	}
	return &absValue{}
}

// setKey scans set D K V: V is held by every built map D may be; set
// refuses anything else at render time (the value is then used, to be
// safe).
func (s *readScan) setKey(d, k, v *absValue, nodes []parse.Node) {
	ks, isConst := "", false
	if len(nodes) > 1 {
		ks, isConst = constString(nodes[1])
	}
	if !isConst {
		s.use(k)
	}
	if len(d.nodes) == 0 || len(d.origins) > 0 || d.resources || len(d.handles) > 0 {
		s.use(v)
		s.use(d)
	}
	for n := range d.nodes {
		s.setIn(n, ks, isConst, v)
	}
}

// index scans get D K and index D K1 K2...: a constant string key is a
// field; a number selects a list element (not distinguished); any other
// key is used and selects any child.
func (s *readScan) index(v *absValue, keys []parse.Node, args []*absValue) *absValue {
	for i, a := range args {
		switch n := keys[i].(type) {
		case *parse.StringNode:
			v = s.field(v, n.Text)
		case *parse.NumberNode:
			v = s.listElement(v)
		default:
			s.use(a)
			v = s.anyChild(v)
		}
	}
	return v
}

// listElement returns an element of the lists v may be.
func (s *readScan) listElement(v *absValue) *absValue {
	out := &absValue{}
	for o := range v.origins {
		if o.coll {
			out.join(&absValue{origins: set(origin{store: o.store})})
			continue
		}
		out.join(&absValue{origins: set(o)})
	}
	out.join(s.anyChild(&absValue{nodes: v.nodes, resources: v.resources, handles: v.handles}))
	return out
}

// hasKey scans hasKey D K: the key's presence is read. (The keys of a
// built map are constants or values used when they were set.)
func (s *readScan) hasKey(d, k *absValue, nodes []parse.Node) {
	objects := &absValue{origins: d.origins, resources: d.resources, handles: d.handles}
	if len(nodes) > 1 {
		if ks, ok := constString(nodes[1]); ok {
			s.use(s.field(objects, ks))
			return
		}
	}
	s.use(k)
	s.anyChild(objects)
}

// owner scans the OBJECT of warn and fail: a store object names itself by
// its kind, namespace and name (refOf) or by being that object (the source
// map), which every store keeps (watched.NewKeep), so none of its fields is
// read; anything else it may be (a field, a built map) is used whole.
func (s *readScan) owner(v *absValue) {
	rest := &absValue{nodes: v.nodes, resources: v.resources, handles: v.handles}
	for o := range v.origins {
		if o.path != "" || o.coll {
			if rest.origins == nil {
				rest.origins = map[origin]struct{}{}
			}
			rest.origins[o] = struct{}{}
		}
	}
	s.use(rest)
}
