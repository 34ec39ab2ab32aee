package render

import (
	"fmt"
	"text/template"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/values"
)

// maxIncludeDepth bounds nested include calls (a snippet including itself).
const maxIncludeDepth = 64

// include implements include NAME DATA: the output of the named template
// (usually a snippet) as a string, so it can be captured in a variable,
// compared or piped. A fail inside it stops the render as usual.
func (s *renderState) include(name string, data any) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	if s.tmpl == nil || s.tmpl.Lookup(name) == nil {
		return "", fmt.Errorf("include %q: no such template", name)
	}
	if s.depth >= maxIncludeDepth {
		return "", fmt.Errorf("include %q: nested more than %d deep (a snippet including itself?)", name, maxIncludeDepth)
	}
	s.depth++
	defer func() { s.depth-- }()
	buf := s.Capture()
	s.writers = append(s.writers, &buf)
	defer func() { s.writers = s.writers[:len(s.writers)-1] }()
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// addFile implements addFile KIND NAME CONTENT: it adds a map, file or
// certificate to the bundle during the render (e.g. one certificate per TLS
// Secret) and returns the absolute path it will have, like pathFor. Adding
// the same name again with the same content is allowed; with other content,
// or with the name of a file the spec already renders, it is an error.
// Files added while rendering haproxy.cfg are known to pathFor in the maps,
// files and certificates rendered after it. Their content counts towards
// the bundle size limit.
//
// An optional fourth argument, a resource object, is the object the file
// belongs to in the source map (e.g. the Secret a certificate comes from);
// by default it is the object being iterated over with Each. Inside a
// fragment the file is recorded with the fragment and added when its
// record is applied (fragment.go).
func (s *renderState) addFile(kind, name string, content any, owner ...any) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	k := bundle.Kind(kind)
	switch k {
	case bundle.KindMap, bundle.KindFile, bundle.KindCert:
	default:
		return "", fmt.Errorf("addFile %q %q: unknown kind %q; want \"map\", \"file\" or \"cert\"", kind, name, kind)
	}
	if err := bundle.CheckName(name); err != nil {
		return "", fmt.Errorf("addFile %s %q: %w", kind, name, err)
	}
	if _, static := s.engine.names[k][name]; static {
		return "", fmt.Errorf("addFile %s %q: %s already renders a %s of that name", kind, name, specField(k), kind)
	}
	text, ok := content.(string)
	if !ok {
		return "", fmt.Errorf("addFile %s %q: content must be a string, not %T", kind, name, content)
	}
	var ownerObj map[string]any
	if len(owner) > 0 {
		ownerObj, _ = values.ObjectContent(owner[0])
	}
	if f := s.sources.frag; f != nil {
		f.Files = append(f.Files, fragments.AddedFile{Kind: k, Name: name, Text: text, Owner: ownerObj})
		return bundle.Path(s.baseDir, k, name), nil
	}
	if err := s.applyFile(kind, k, name, text, ownerObj, true); err != nil {
		return "", err
	}
	return bundle.Path(s.baseDir, k, name), nil
}

// applyFile adds the file kind/name with text to the render; with track,
// the tracker writes down that owner owns it (nil: the current object).
func (s *renderState) applyFile(kind string, k bundle.Kind, name, text string, owner map[string]any, track bool) error {
	if s.added == nil {
		s.added = map[bundle.Kind]map[string]string{}
	}
	if s.added[k] == nil {
		s.added[k] = make(map[string]string, s.engine.sizes.Load().added[k])
	}
	prev, dup := s.added[k][name]
	if dup && prev != text {
		return fmt.Errorf("addFile %s %q: added twice with different content", kind, name)
	}
	if !dup {
		if err := s.ChargeBundle("addFile", int64(len(text))); err != nil {
			return err
		}
	}
	s.added[k][name] = text
	if track {
		s.sources.file(relPath(k, name), owner)
	}
	return nil
}

// addedTo copies the files added during the render into b.
func (s *renderState) addedTo(b *bundle.Bundle) {
	for k, files := range s.added {
		dst := b.Maps
		switch k {
		case bundle.KindFile:
			dst = b.Files
		case bundle.KindCert:
			dst = b.Certs
		}
		for name, content := range files {
			dst[name] = content
		}
	}
}

// bindTemplate lets include execute templates of the render's own clone.
func (s *renderState) bindTemplate(t *template.Template) { s.tmpl = t }
