package render

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"maps"
	"reflect"
	"slices"
	"text/template"
	"text/template/parse"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// Carried records: a config change builds a new Engine, whose first render
// would run every fragment. What a fragment does (its record) depends on
// its name, its item, what its store reads return (all three checked as
// for any record, fragments.Table.Reusable), and on what the config gives
// it: the templates it can run, extraContext, the output names (pathFor,
// addFile), the BaseDir and the size limit (the table's). Carry hands a
// new engine the records of the live engine's last recording render, to
// be applied only for a fragment NAME whose reach (NAME and every template
// it can include or call, each by the text of the source defining it) is
// the same text in both engines, when extraContext and the output names
// are equal too. A reach with an include of a computed name, or a node the
// walk does not know, is never the same: such a fragment runs.

// carried is what Carry handed an engine: another engine's records and the
// fragment names that may apply them.
type carried struct {
	table *fragments.Table
	same  map[string]bool
}

// Carry lets e's renders apply the fragment records of from's last
// recording render, for the fragments whose reach is the same in both
// engines (see above), until e keeps records of its own. It returns how
// many template names may apply them; 0 when none may (then nothing is
// carried): another extraContext or other output names, no records, no
// reach in common.
func (e *Engine) Carry(from *Engine) int {
	if from == nil || from == e {
		return 0
	}
	t := from.table.Load()
	if t == nil || !reflect.DeepEqual(e.extra, from.extra) || !maps.EqualFunc(e.names, from.names, maps.Equal) {
		return 0
	}
	mine, theirs := e.reaches(), from.reaches()
	same := make(map[string]bool, len(mine))
	for name, d := range mine {
		if o, ok := theirs[name]; ok && o == d {
			same[name] = true
		}
	}
	if len(same) == 0 {
		return 0
	}
	e.carried.Store(&carried{table: t, same: same})
	return len(same)
}

// reaches returns the digest of the reach of every template whose reach is
// known (computed once).
func (e *Engine) reaches() map[string][sha256.Size]byte {
	e.reachOnce.Do(func() { e.reach = reachDigests(e.root, e.definedBy) })
	return e.reach
}

// reachDigests returns, for each template of root whose reach is known,
// the SHA-256 of the names of the templates it reaches (itself included),
// sorted, each with the digest of the source defining it (defs, by
// template name; a name no source defines is told apart).
func reachDigests(root *template.Template, defs map[string][sha256.Size]byte) map[string][sha256.Size]byte {
	edges := map[string][]string{}
	unknown := map[string]bool{}
	for _, t := range root.Templates() {
		names, known := calls(t.Tree)
		edges[t.Name()], unknown[t.Name()] = names, !known
	}
	out := make(map[string][sha256.Size]byte, len(edges))
next:
	for start := range edges {
		seen := map[string]bool{start: true}
		for todo := []string{start}; len(todo) > 0; {
			name := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if unknown[name] {
				continue next
			}
			for _, c := range edges[name] {
				if !seen[c] {
					seen[c] = true
					todo = append(todo, c)
				}
			}
		}
		h := sha256.New()
		for _, name := range slices.Sorted(maps.Keys(seen)) {
			d, defined := defs[name]
			var part [8 + 1 + sha256.Size]byte
			binary.BigEndian.PutUint64(part[:8], uint64(len(name)))
			if defined {
				part[8] = 1
			}
			copy(part[9:], d[:])
			h.Write(part[:8])
			h.Write([]byte(name))
			h.Write(part[8:])
		}
		out[start] = [sha256.Size]byte(h.Sum(nil))
	}
	return out
}

// calls returns the names of the templates tr can run ({{ template }} and
// include with a constant name); known is false when it holds an include
// whose name is computed, or a node tree.Walk does not know.
func calls(tr *parse.Tree) (names []string, known bool) {
	if tr == nil || tr.Root == nil {
		return nil, true
	}
	heads := map[*parse.IdentifierNode]bool{}
	err := tree.Walk(tr.Root, func(n parse.Node) error {
		switch x := n.(type) {
		case *parse.TemplateNode:
			names = append(names, x.Name)
		case *parse.CommandNode:
			if len(x.Args) < 2 {
				break
			}
			if id, ok := x.Args[0].(*parse.IdentifierNode); ok && id.Ident == "include" {
				if s, ok := x.Args[1].(*parse.StringNode); ok {
					names = append(names, s.Text)
					heads[id] = true
				}
			}
		case *parse.IdentifierNode:
			if x.Ident == "include" && !heads[x] {
				return errComputed
			}
		}
		return nil
	})
	return names, err == nil
}

// errComputed stops calls' walk at an include whose name is computed.
var errComputed = errors.New("an include of a computed name")
