package tree

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"text/template"
	"text/template/parse"
)

// Reaches returns, for each template of root whose reach is known, the
// SHA-256 of the names of the templates it reaches (itself included),
// sorted, each with the digest of the source defining it (defs, by
// template name; a name no source defines is told apart). A template
// reaches the templates it calls ({{ template }}, include with a constant
// name), transitively; its reach is unknown when it reaches an include of
// a computed name or a node Walk does not know. Two template sets whose
// templates have the same digest run the same text when the template is
// run (package render carries fragment records by it).
func Reaches(root *template.Template, defs map[string][sha256.Size]byte) map[string][sha256.Size]byte {
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
// whose name is computed, or a node Walk does not know.
func calls(tr *parse.Tree) (names []string, known bool) {
	if tr == nil || tr.Root == nil {
		return nil, true
	}
	heads := map[*parse.IdentifierNode]bool{}
	err := Walk(tr.Root, func(n parse.Node) error {
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
