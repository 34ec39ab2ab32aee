package render

import (
	"slices"
	"text/template"
	"text/template/parse"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// Whole reads of a channel without its map. `emitted CHANNEL` returns
// every entry as one map, which a channel over a base
// (fragments.OverBase: the recording render's, with the few keys this
// render changed) builds by copying the base. Four calls need of that map
// only its keys in order and their values:
//
//	len (emitted X)   keys (emitted X)   values (emitted X)
//	fragments NAME (emitted X)
//
// New rewrites each of them, where the call is a pipeline's first command
// and the channel's read is written as its argument (one pipeline of one
// command: emitted and one argument), into a call of a function of its own (fusedFuncs) that reads
// the channel by its methods and returns what the call it replaces
// returns: the same value of the same type, in the same order, the same
// error (its text names the function run). Any other read of a channel
// (range, a variable, index, hasKey, a prefix) is emitted's, as before.
// Templates cannot call those functions: they are bound at render time
// only, so a template naming one does not parse.
// TestFusedChannelReadsReturnWhatTheCallsTheyReplaceReturn compares them.

// fusedNames are the functions fuseChannelReads calls, by the function
// whose call of (emitted X) they replace.
var fusedNames = map[string]string{
	"len": "emittedLen", "keys": "emittedKeys", "values": "emittedValues", "fragments": "emittedFragments",
}

// fuseChannelReads rewrites the calls of every template of root that
// fusedNames lists.
func fuseChannelReads(root *template.Template) error {
	for _, t := range root.Templates() {
		if t.Tree == nil || t.Root == nil {
			continue
		}
		err := tree.Walk(t.Root, func(n parse.Node) error {
			// The first command of a pipeline: a later one is given
			// the one before's result as its last argument.
			if p, ok := n.(*parse.PipeNode); ok && len(p.Cmds) > 0 {
				fuseCommand(t.Tree, p.Cmds[0])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fuseCommand rewrites c when it is F (emitted X), or fragments NAME
// (emitted X), into the fused function's call with the same arguments
// but the channel's name X.
func fuseCommand(tr *parse.Tree, c *parse.CommandNode) {
	if len(c.Args) < 2 {
		return
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return
	}
	fused, ok := fusedNames[id.Ident]
	if !ok || len(c.Args) != 2+boolIndex(id.Ident == "fragments") {
		return
	}
	last := len(c.Args) - 1
	x, ok := emittedArg(c.Args[last])
	if !ok {
		return
	}
	args := append([]parse.Node{parse.NewIdentifier(fused).SetTree(tr).SetPos(id.Pos)}, c.Args[1:last]...)
	c.Args = append(args, x)
}

// emittedArg returns X when n is (emitted X).
func emittedArg(n parse.Node) (parse.Node, bool) {
	p, ok := n.(*parse.PipeNode)
	if !ok || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 2 {
		return nil, false
	}
	if id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode); !ok || id.Ident != "emitted" {
		return nil, false
	}
	return p.Cmds[0].Args[1], true
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fusedFuncs are the functions fuseChannelReads calls, bound to s.
func fusedFuncs(s *renderState) template.FuncMap {
	return template.FuncMap{
		"emittedLen": s.emittedLen, "emittedKeys": s.emittedKeys,
		"emittedValues": s.emittedValues, "emittedFragments": s.emittedFragments,
	}
}

// readWhole is emitted's read of channel name (no prefix), without its
// map: the same checks and errors. The caller reads it (the channel takes
// no more).
func (s *renderState) readWhole(name string) (*fragments.Channel, error) {
	if err := s.emittedCheck(name, 0); err != nil {
		return nil, err
	}
	return s.readChannel(name), nil
}

// emittedLen is len (emitted X).
func (s *renderState) emittedLen(name string) (int, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return 0, err
	}
	return c.Count(), nil
}

// emittedKeys is keys (emitted X): keys of a dict whose order the render
// knows, a copy of it; of an empty one, an empty list.
func (s *renderState) emittedKeys(name string) ([]string, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return nil, err
	}
	if err := s.Interrupted(); err != nil {
		return nil, err
	}
	if c.Count() == 0 {
		return []string{}, nil
	}
	return slices.Clone(c.Sorted()), nil
}

// emittedValues is values (emitted X): the values in key order.
func (s *renderState) emittedValues(name string) ([]any, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return nil, err
	}
	if err := s.Interrupted(); err != nil {
		return nil, err
	}
	ks := c.Sorted()
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i], _ = c.Get(k)
	}
	return out, nil
}

// emittedFragments is fragments NAME (emitted X): NAME for each entry in
// key order.
func (s *renderState) emittedFragments(name, channel string) (string, error) {
	c, err := s.readWhole(channel)
	if err != nil {
		return "", err
	}
	if err := s.fragmentsCheck(name); err != nil {
		return "", err
	}
	for _, k := range c.Sorted() {
		v, _ := c.Get(k)
		if err := s.fragment(name, k, v); err != nil {
			return "", err
		}
	}
	return "", nil
}
