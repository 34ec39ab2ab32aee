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
// Inside a fragment, NAME is one the spec renders or the fragment added:
// what was added outside it is not its input (fragment.go).
func (s *renderState) pathFor(kind, name string) (string, error) {
	if err := s.Interrupted(); err != nil {
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
	if _, ok := s.engine.names[k][name]; ok || s.wasAdded(k, name) {
		return bundle.Path(s.baseDir, k, name), nil
	}
	if s.sources.frag != nil {
		return "", fmt.Errorf("pathFor %s %q: no such %s in %s or added by this fragment (pass the path of a file added outside the fragment as its argument)", kind, name, kind, specField(k))
	}
	return "", fmt.Errorf("pathFor %s %q: no such %s in %s", kind, name, kind, specField(k))
}

// wasAdded reports whether addFile added the file kind/name so far: in
// this render, or inside a fragment by the fragment itself.
func (s *renderState) wasAdded(k bundle.Kind, name string) bool {
	if f := s.sources.frag; f != nil {
		for _, a := range f.Files {
			if a.Kind == k && a.Name == name {
				return true
			}
		}
		return false
	}
	_, ok := s.added[k][name]
	return ok
}
