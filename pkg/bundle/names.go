package bundle

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// CheckName returns an error unless name is acceptable as the name of a map,
// file or certificate: a non-empty, relative, slash-separated path that
// stays inside its bundle directory — no leading slash, no empty, "." or ".."
// segment, no backslash and no control character. The error says which rule
// the name breaks.
func CheckName(name string) error {
	if name == "" {
		return errors.New("the name is empty")
	}
	if strings.HasPrefix(name, "/") {
		return errors.New("the name is an absolute path; want a name relative to the bundle")
	}
	for _, r := range name {
		switch {
		case r == '\\':
			return errors.New("the name contains a backslash")
		case unicode.IsControl(r):
			return fmt.Errorf("the name contains a control character (%U)", r)
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "..":
			return errors.New("the name contains \"..\"; it must stay inside the bundle")
		case "", ".":
			return errors.New("the name has an empty or \".\" path segment")
		}
	}
	return nil
}
