package render

import (
	"fmt"
	"strings"
)

// valueCall is one includeValue call running: the writers' depth of its
// snippet (so that result knows it is called by that snippet, not by an
// include or a fragment inside it) and the value result gave it.
type valueCall struct {
	writers int
	given   bool
	value   any
}

// includeValue implements includeValue NAME DATA: it runs the named
// snippet like include, but returns the value the snippet gives with
// result instead of its text: a dict, a list, a number or a string, as it
// was built (an integer stays an integer; no JSON round trip). The snippet
// must give one value and write nothing but blanks.
func (s *renderState) includeValue(name string, data any) (any, error) {
	s.values = append(s.values, valueCall{writers: len(s.writers) + 1})
	text, err := s.include(name, data)
	call := s.values[len(s.values)-1]
	s.values[len(s.values)-1] = valueCall{}
	s.values = s.values[:len(s.values)-1]
	switch {
	case err != nil:
		return nil, err
	case strings.TrimSpace(text) != "":
		return nil, fmt.Errorf("includeValue %q: the snippet wrote text; a snippet run for its value gives it with result and writes nothing else", name)
	case !call.given:
		return nil, fmt.Errorf("includeValue %q: the snippet gave no value (result VALUE)", name)
	}
	return call.value, nil
}

// result implements result VALUE: VALUE is what the includeValue call
// running the snippet returns. It is given once, by that snippet itself
// (or a template it calls with the template action), never by a snippet
// it includes or a fragment.
func (s *renderState) result(v any) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	if len(s.values) == 0 || s.values[len(s.values)-1].writers != len(s.writers) {
		return "", fmt.Errorf("result: only a snippet run by includeValue gives a value")
	}
	call := &s.values[len(s.values)-1]
	if call.given {
		return "", fmt.Errorf("result: the snippet gave its value already")
	}
	call.given, call.value = true, v
	return "", nil
}
