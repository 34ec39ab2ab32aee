package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// fieldStep is one step of a field path: a map key, or a list index.
type fieldStep struct {
	key     string
	index   int
	isIndex bool
}

// parseFieldPath compiles a client-go JSONPath-style field path as used by
// indexBy and kubectl: metadata.name, .spec.rules[0].host,
// metadata.annotations['haproxy.org/timeout'], {.metadata.name}. A backslash
// escapes the next character of an unquoted key (haproxy\.org/timeout).
// Negative indexes count from the end. Constructs selecting several values
// (wildcards, slices, filters) are refused.
func parseFieldPath(expr string) ([]fieldStep, error) {
	s := strings.TrimSpace(expr)
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	s = strings.TrimPrefix(s, "$")
	if s == "" || s == "." {
		return nil, errors.New("empty path; want a field path such as metadata.name")
	}
	var steps []fieldStep
	for i := 0; i < len(s); {
		switch {
		case s[i] == '[':
			step, n, err := parseBracket(s[i:])
			if err != nil {
				return nil, err
			}
			steps = append(steps, step)
			i += n
		case s[i] == '.' || i == 0:
			if s[i] == '.' {
				i++
			}
			var b strings.Builder
			for i < len(s) && s[i] != '.' && s[i] != '[' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			if b.Len() == 0 {
				return nil, errors.New("empty field name (a doubled or trailing '.')")
			}
			key := b.String()
			if key == "*" || strings.ContainsAny(key, "*@?() ") {
				return nil, fmt.Errorf("unsupported field %q; only plain keys, ['quoted keys'] and [index] are allowed", key)
			}
			steps = append(steps, fieldStep{key: key})
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d", s[i], i)
		}
	}
	return steps, nil
}

// parseBracket parses one [n], ['key'] or ["key"] at the start of s and
// returns the step and the number of bytes it spans.
func parseBracket(s string) (fieldStep, int, error) {
	if len(s) > 1 && (s[1] == '\'' || s[1] == '"') {
		end := strings.IndexByte(s[2:], s[1])
		if end < 0 || 2+end+1 >= len(s) || s[2+end+1] != ']' {
			return fieldStep{}, 0, errors.New("unterminated quoted key; want ['key']")
		}
		key := s[2 : 2+end]
		if key == "" {
			return fieldStep{}, 0, errors.New("empty quoted key")
		}
		return fieldStep{key: key}, 2 + end + 2, nil
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return fieldStep{}, 0, errors.New("missing ']'")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s[1:end]))
	if err != nil {
		return fieldStep{}, 0, fmt.Errorf("%s is not a single list index; want [0] or ['key']", s[:end+1])
	}
	return fieldStep{index: n, isIndex: true}, end + 1, nil
}

// lookupPath walks obj along steps. ok is false when a step is missing or
// does not fit the value (a key on a list, an index on a map).
func lookupPath(obj map[string]any, steps []fieldStep) (v any, ok bool) {
	var cur any = obj
	for _, st := range steps {
		if st.isIndex {
			l, isList := cur.([]any)
			if !isList {
				return nil, false
			}
			i := st.index
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
		if cur, ok = m[st.key]; !ok {
			return nil, false
		}
	}
	return cur, true
}
