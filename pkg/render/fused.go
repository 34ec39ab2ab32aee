package render

import (
	"slices"
	"text/template"
	"text/template/parse"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// Whole reads of a channel without its map. `emitted CHANNEL` returns
// every entry as one map, which a channel over a base
// (fragments.OverBase: the recording render's, with the few keys this
// render changed) builds by copying the base. Six calls need of that map
// only its keys in order and their values, or one key's, and len of a
// prefix's map (emitted X P) only how many keys have the prefix
// (fragments.Channel.CountPrefix):
//
//	len (emitted X)   keys (emitted X)   values (emitted X)
//	fragments NAME (emitted X)   get (emitted X) KEY   hasKey (emitted X) KEY
//	len (emitted X P)   join SEP (values (emitted X))
//
// (the last one needs not even the list of values: emittedJoin)
// New rewrites each of them, where the call is a pipeline's first command
// and the channel's read is written as its argument (one pipeline of one
// command: emitted and one argument), into a call of a function of its own (fusedFuncs) that reads
// the channel by its methods and returns what the call it replaces
// returns: the same value of the same type, in the same order, the same
// error (its text names the function run; a KEY whose evaluation fails
// fails before emitted's own checks, not after). Any other read of a
// channel (range, a variable, index, a prefix) is emitted's, as before.
// Templates cannot call those functions: they are bound at render time
// only, so a template naming one does not parse.
// TestFusedChannelReadsReturnWhatTheCallsTheyReplaceReturn compares them.

// fused is the function a call of one of fusedCalls is rewritten into
// when its argument at is (emitted X), of args arguments (the function
// included): the call's arguments with X in place of (emitted X).
type fused struct {
	name     string
	args, at int
}

// fusedCalls are the calls fuseChannelReads rewrites, by the function
// called.
var fusedCalls = map[string]fused{
	"len": {"emittedLen", 2, 1}, "keys": {"emittedKeys", 2, 1}, "values": {"emittedValues", 2, 1},
	"fragments": {"emittedFragments", 3, 2}, "get": {"emittedGet", 3, 1}, "hasKey": {"emittedHasKey", 3, 1},
}

// fuseChannelReads rewrites the calls of every template of root that
// fusedCalls lists.
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

// fuseCommand rewrites c when it is a call fusedCalls lists with (emitted
// X) where it says.
func fuseCommand(tr *parse.Tree, c *parse.CommandNode) {
	if len(c.Args) < 2 {
		return
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		return
	}
	if id.Ident == "len" && len(c.Args) == 2 {
		if x, prefix, ok := emittedPrefixArgs(c.Args[1]); ok {
			c.Args = []parse.Node{parse.NewIdentifier("emittedLenPrefix").SetTree(tr).SetPos(id.Pos), x, prefix}
			return
		}
	}
	if id.Ident == "join" && len(c.Args) == 3 {
		if x, ok := valuesOfEmittedArg(c.Args[2]); ok {
			c.Args = []parse.Node{parse.NewIdentifier("emittedJoin").SetTree(tr).SetPos(id.Pos), c.Args[1], x}
			return
		}
	}
	f, ok := fusedCalls[id.Ident]
	if !ok || len(c.Args) != f.args {
		return
	}
	x, ok := emittedArg(c.Args[f.at])
	if !ok {
		return
	}
	args := slices.Clone(c.Args)
	args[0], args[f.at] = parse.NewIdentifier(f.name).SetTree(tr).SetPos(id.Pos), x
	c.Args = args
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

// valuesOfEmittedArg returns X when n is (values (emitted X)), or what
// fuseCommand rewrites that into, (emittedValues X).
func valuesOfEmittedArg(n parse.Node) (parse.Node, bool) {
	p, ok := n.(*parse.PipeNode)
	if !ok || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 2 {
		return nil, false
	}
	id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode)
	switch {
	case !ok:
		return nil, false
	case id.Ident == "emittedValues":
		return p.Cmds[0].Args[1], true
	case id.Ident == "values":
		return emittedArg(p.Cmds[0].Args[1])
	}
	return nil, false
}

// emittedPrefixArgs returns X and P when n is (emitted X P).
func emittedPrefixArgs(n parse.Node) (x, prefix parse.Node, ok bool) {
	p, ok := n.(*parse.PipeNode)
	if !ok || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 3 {
		return nil, nil, false
	}
	if id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode); !ok || id.Ident != "emitted" {
		return nil, nil, false
	}
	return p.Cmds[0].Args[1], p.Cmds[0].Args[2], true
}

// fusedFuncs are the functions fuseChannelReads calls, bound to s.
func fusedFuncs(s *renderState) template.FuncMap {
	return template.FuncMap{
		"emittedLen": s.emittedLen, "emittedKeys": s.emittedKeys,
		"emittedValues": s.emittedValues, "emittedFragments": s.emittedFragments,
		"emittedGet": s.emittedGet, "emittedHasKey": s.emittedHasKey,
		"emittedLenPrefix": s.emittedLenPrefix, "emittedJoin": s.emittedJoin,
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

// emittedLenPrefix is len (emitted X P): how many entries of X have a
// key that begins with P, with emitted's checks of one prefix.
func (s *renderState) emittedLenPrefix(name, prefix string) (int, error) {
	if err := s.emittedCheck(name, 1); err != nil {
		return 0, err
	}
	return s.readChannel(name).CountPrefix(prefix), nil
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
	vals := c.Values()
	if len(vals) > 0 {
		if s.frags.valuesOf == nil {
			s.frags.valuesOf = map[unsafe.Pointer]valuesOf{}
		}
		s.frags.valuesOf[unsafe.Pointer(unsafe.SliceData(vals))] = valuesOf{c: c, n: len(vals)}
	}
	return vals, nil
}

// A list values (emitted X) returned, joined (join SEP LIST, as maps are
// written), is the channel's values joined, which a channel over the
// recording render's splices from the text of its base
// (fragments.Channel.Joined) instead of joining every value again. The
// list is known by its address and length: the render keeps it (the key
// is a pointer), so no other list has that address, and no function
// changes a list (push writes only past the length of the arrays it
// made), so it holds the channel's values for the render.

// valuesOf is the channel a list values (emitted X) returned lists, of
// n values.
type valuesOf struct {
	c *fragments.Channel
	n int
}

// joinedValues is join SEP v when v is a list emittedValues returned,
// false otherwise (or when its channel cannot answer: Joined).
func (s *renderState) joinedValues(sep string, v any) (string, bool) {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return "", false
	}
	o, ok := s.frags.valuesOf[unsafe.Pointer(unsafe.SliceData(l))]
	if !ok || o.n != len(l) {
		return "", false
	}
	text, nl, ok := o.c.Joined(sep)
	if ok && text != "" {
		if s.frags.newlined == nil {
			s.frags.newlined = map[unsafe.Pointer]string{}
		}
		s.frags.newlined[unsafe.Pointer(unsafe.StringData(text))] = nl
	}
	return text, ok
}

// emittedJoin is join SEP (values (emitted X)): the channel's values
// joined, which a channel over the recording render's splices from the
// text of its base (fragments.Channel.Joined), without the list of its
// values that values would build (10,000 of them for a map of 10,000
// routes): what joinedValues does, with join's checks (funcs.Set.JoinedText).
// When the channel cannot answer, its values are joined.
func (s *renderState) emittedJoin(sep, name string) (string, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return "", err
	}
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	if text, nl, ok := c.Joined(sep); ok {
		if res, ok, err := s.guarded.JoinedText(sep, int64(c.Count()), text); ok {
			if err == nil && text != "" {
				if s.frags.newlined == nil {
					s.frags.newlined = map[unsafe.Pointer]string{}
				}
				s.frags.newlined[unsafe.Pointer(unsafe.StringData(text))] = nl
			}
			return res, err
		}
	}
	return s.guarded.Join(sep, c.Values())
}

// withNewline is printf "%s\n" str when str is a text joinedValues
// returned: the text and a newline its channel made with it (the same
// memory: a string of that address and length is that text).
func (s *renderState) withNewline(str string) (string, bool) {
	if str == "" {
		return "", false
	}
	nl, ok := s.frags.newlined[unsafe.Pointer(unsafe.StringData(str))]
	if !ok || len(nl) != len(str)+1 {
		return "", false
	}
	return nl, true
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
	// Each value from the base's list in key order when it knows it
	// (fragments.Channel.Entries), else by its key.
	ks, vs := c.Entries()
	for i, k := range ks {
		var v any
		if vs != nil {
			v = vs[i]
		} else {
			v, _ = c.Get(k)
		}
		if err := s.fragment(name, k, v); err != nil {
			return "", err
		}
	}
	return "", nil
}

// emittedGet is get (emitted X) KEY: KEY's value, "" when none.
func (s *renderState) emittedGet(name, key string) (any, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return nil, err
	}
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	return "", nil
}

// emittedHasKey is hasKey (emitted X) KEY.
func (s *renderState) emittedHasKey(name, key string) (bool, error) {
	c, err := s.readWhole(name)
	if err != nil {
		return false, err
	}
	_, ok := c.Get(key)
	return ok, nil
}
