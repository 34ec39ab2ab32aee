package render

import (
	"fmt"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/render/values"
)

// warn implements warn OBJECT MESSAGE: the render goes on, and MESSAGE
// rides on the bundle (Bundle.Warnings) as a warning about OBJECT, a
// resource object: an admission that changes OBJECT and is allowed shows
// it to the user (package admission), as ingress-nginx's library warns
// about an annotation it does not know. Inside a fragment the warning is
// recorded with the fragment and given when its record is applied, so a
// reused record warns as the fragment did. It returns "".
func (s *renderState) warn(obj any, msg string) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	o, ok := values.ObjectContent(obj)
	if !ok {
		return "", fmt.Errorf("warn: want OBJECT MESSAGE, where OBJECT is a resource object, got %T", obj)
	}
	if err := s.Charge("warn", int64(len(msg))+entrySize); err != nil {
		return "", err
	}
	w := bundle.Warning{Object: refOf("", o), Message: msg}
	if f := s.sources.frag; f != nil {
		f.Warnings = append(f.Warnings, w)
		return "", nil
	}
	s.warnings = append(s.warnings, w)
	return "", nil
}
