package render

import (
	"fmt"
	"strings"
	"unicode"
)

// specField names the spec field that lists the outputs of kind k.
func specField(k Kind) string {
	switch k {
	case KindMap:
		return "spec.maps"
	case KindFile:
		return "spec.files"
	default:
		return "spec.sslCertificates"
	}
}

// checkName returns an error unless name is a relative, slash-separated path
// that stays inside its bundle directory: no empty, "." or ".." segment, no
// leading slash, no control characters.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("the name is empty")
	}
	if strings.HasPrefix(name, "/") {
		return fmt.Errorf("the name is an absolute path; want a name relative to the bundle")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("the name contains %s", charName(r))
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("the name contains \"..\"; it must stay inside the bundle")
		case "", ".":
			return fmt.Errorf("the name has an empty or \".\" path segment")
		}
	}
	return nil
}

// pathFor implements pathFor KIND NAME: the absolute path the map, file or
// certificate NAME has in the bundle rendered for this render's BaseDir.
func (s *renderState) pathFor(kind, name string) (string, error) {
	k := Kind(kind)
	switch k {
	case KindMap, KindFile, KindCert:
	default:
		return "", fmt.Errorf("pathFor %q %q: unknown kind %q; want \"map\", \"file\" or \"cert\"", kind, name, kind)
	}
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("pathFor %s %q: %w", kind, name, err)
	}
	if _, ok := s.added[k][name]; ok {
		return Path(s.baseDir, k, name), nil
	}
	if _, ok := s.engine.names[k][name]; !ok {
		return "", fmt.Errorf("pathFor %s %q: no such %s in %s", kind, name, kind, specField(k))
	}
	return Path(s.baseDir, k, name), nil
}
