package render

import (
	"fmt"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// specField names the spec field that lists the outputs of kind k.
func specField(k bundle.Kind) string {
	switch k {
	case bundle.KindMap:
		return "spec.maps"
	case bundle.KindFile:
		return "spec.files"
	default:
		return "spec.sslCertificates"
	}
}

// pathFor implements pathFor KIND NAME: the absolute path the map, file or
// certificate NAME has in the bundle rendered for this render's BaseDir.
func (s *renderState) pathFor(kind, name string) (string, error) {
	if err := s.interrupted(); err != nil {
		return "", err
	}
	k := bundle.Kind(kind)
	switch k {
	case bundle.KindMap, bundle.KindFile, bundle.KindCert:
	default:
		return "", fmt.Errorf("pathFor %q %q: unknown kind %q; want \"map\", \"file\" or \"cert\"", kind, name, kind)
	}
	if err := bundle.CheckName(name); err != nil {
		return "", fmt.Errorf("pathFor %s %q: %w", kind, name, err)
	}
	if _, static := s.engine.names[k][name]; !static {
		s.readAdded() // the answer depends on the files added so far
	}
	if _, ok := s.added[k][name]; ok {
		return bundle.Path(s.baseDir, k, name), nil
	}
	if _, ok := s.engine.names[k][name]; !ok {
		return "", fmt.Errorf("pathFor %s %q: no such %s in %s", kind, name, kind, specField(k))
	}
	return bundle.Path(s.baseDir, k, name), nil
}
