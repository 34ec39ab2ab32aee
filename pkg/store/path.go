package store

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// FieldPath is one compiled field path (an indexBy expression, or the path
// of the template function field): a chain of map-key and list-index steps
// evaluated directly over unstructured content (no reflection, no shared
// mutable parser state, so it is safe for concurrent use).
type FieldPath []step

// step selects a map key (field) or, when isIndex, a list element.
type step struct {
	field   string
	index   int
	isIndex bool
}

// ParseFieldPath compiles one field path such as `metadata.name` or
// `metadata.labels['kubernetes.io/service-name']` with client-go's JSONPath
// parser. Only field names, quoted keys and single list indexes are
// accepted: anything selecting several values (wildcards, slices, unions,
// filters, recursive descent) cannot be an index key.
func ParseFieldPath(expr string) (FieldPath, error) {
	text := expr
	if len(text) >= 2 && text[0] == '{' && text[len(text)-1] == '}' {
		text = text[1 : len(text)-1] // accept kubectl's {.a.b} form too
	}
	if strings.HasPrefix(text, "$.") || strings.HasPrefix(text, "$[") {
		text = text[1:]
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty expression; want a field path such as metadata.name")
	}
	text, err := rewriteQuotedKeys(text)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(text, ".") && !strings.HasPrefix(text, "[") {
		text = "." + text
	}
	parser, err := jsonpath.Parse("fieldpath", "{"+text+"}")
	if err != nil {
		return nil, err
	}
	if len(parser.Root.Nodes) != 1 {
		return nil, errors.New("not a single field path (stray braces?)")
	}
	list, ok := parser.Root.Nodes[0].(*jsonpath.ListNode)
	if !ok || len(list.Nodes) == 0 {
		return nil, errors.New("not a field path")
	}
	p := make(FieldPath, 0, len(list.Nodes))
	for _, node := range list.Nodes {
		s, err := compileNode(node)
		if err != nil {
			return nil, err
		}
		p = append(p, s)
	}
	return p, nil
}

// compileNode turns one parsed JSONPath node into a step, refusing every
// construct that does not select exactly one value.
func compileNode(node jsonpath.Node) (step, error) {
	switch n := node.(type) {
	case *jsonpath.FieldNode:
		if n.Value == "" {
			return step{}, errors.New("empty field name (a leading, trailing or doubled '.')")
		}
		return step{field: n.Value}, nil
	case *jsonpath.ArrayNode:
		p := n.Params
		if p[0].Known && p[1].Known && p[1].Derived && !p[2].Known {
			return step{index: p[0].Value, isIndex: true}, nil
		}
		return step{}, errors.New("slices and [*] select several values; use a single index such as [0]")
	case *jsonpath.WildcardNode:
		return step{}, errors.New("wildcards (*) select several values and cannot be an index key")
	case *jsonpath.RecursiveNode:
		return step{}, errors.New("recursive descent (..) is not supported")
	case *jsonpath.FilterNode:
		return step{}, errors.New("filters [?(...)] are not supported")
	case *jsonpath.UnionNode:
		return step{}, errors.New("unions [a,b] select several values and cannot be an index key")
	case *jsonpath.IdentifierNode:
		return step{}, fmt.Errorf("unexpected %q (quote keys with spaces or special characters: ['my key'])", n.Name)
	default:
		return step{}, fmt.Errorf("unexpected %s", strings.TrimPrefix(node.String(), "Node"))
	}
}

// rewriteQuotedKeys turns every ['key'] or ["key"] into the escaped field
// form .key, escaping the characters that end a field. client-go's JSONPath
// parser would otherwise split ['kubernetes.io/service-name'] at the dot
// into the two fields "kubernetes" and "io/service-name", reject double
// quotes, and misread keys with spaces.
func rewriteQuotedKeys(s string) (string, error) {
	if !strings.Contains(s, "['") && !strings.Contains(s, `["`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			b.WriteString(s[i : i+2])
			i += 2
			continue
		}
		if c == '[' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"') {
			start := i + 2
			end := strings.IndexByte(s[start:], s[i+1])
			if end >= 0 && start+end+1 < len(s) && s[start+end+1] == ']' {
				key := s[start : start+end]
				if key == "" {
					return "", errors.New("empty quoted key")
				}
				if strings.ContainsRune(key, '\\') {
					return "", fmt.Errorf("quoted key %q contains a backslash, which JSONPath cannot express", key)
				}
				b.WriteByte('.')
				writeEscapedField(&b, key)
				i = start + end + 2
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// writeEscapedField writes key with a backslash before every character the
// JSONPath parser treats as the end of a field name.
func writeEscapedField(b *strings.Builder, key string) {
	for _, r := range key {
		switch r {
		case ' ', '\t', '\r', '\n', '.', ',', '[', ']', '$', '@', '{', '}':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// Lookup walks content along p. ok is false when a step is missing, or the
// value at a step is not a map (field) or list (index).
func (p FieldPath) Lookup(content map[string]any) (v any, ok bool) {
	var cur any = content
	for _, s := range p {
		if s.isIndex {
			l, isList := cur.([]any)
			if !isList {
				return nil, false
			}
			i := s.index
			if i < 0 {
				i += len(l)
			}
			if i < 0 || i >= len(l) {
				return nil, false
			}
			cur = l[i]
			continue
		}
		m, isMap := cur.(map[string]any)
		if !isMap {
			return nil, false
		}
		if cur, ok = m[s.field]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Fields returns the field names of p in order, without its list indexes
// (spec.rules[0].host gives spec, rules, host).
func (p FieldPath) Fields() []string {
	out := make([]string, 0, len(p))
	for _, s := range p {
		if !s.isIndex {
			out = append(out, s.field)
		}
	}
	return out
}
