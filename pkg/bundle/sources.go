package bundle

import (
	"slices"
	"strings"
)

// ObjectRef names one Kubernetes object that contributed to a bundle.
type ObjectRef struct {
	// Store is the watchedResources key of the store the object was read
	// from.
	Store string
	// Kind is the object's kind ("Ingress").
	Kind string
	// Namespace and Name identify the object.
	Namespace, Name string
}

// String names the object as reasons do: "Ingress team-a/web".
func (r ObjectRef) String() string {
	kind := r.Kind
	if kind == "" {
		kind = "object"
	}
	switch {
	case r.Namespace != "":
		return kind + " " + r.Namespace + "/" + r.Name
	default:
		return kind + " " + r.Name
	}
}

// Compare orders references by store, namespace, name and kind.
func (r ObjectRef) Compare(o ObjectRef) int {
	for _, c := range [][2]string{{r.Store, o.Store}, {r.Namespace, o.Namespace}, {r.Name, o.Name}, {r.Kind, o.Kind}} {
		if d := strings.Compare(c[0], c[1]); d != 0 {
			return d
		}
	}
	return 0
}

// Sources says which objects produced which parts of a bundle and what
// each object read while it was rendered. The renderer keeps it while
// rendering: output written while a template iterated over an object
// (.resources.<key>.Each) is that object's, and so are files added with an
// object. It is metadata: it takes no part in Hash.
type Sources struct {
	// Objects are the objects referred to below, by index.
	Objects []ObjectRef
	// Lines maps a file (its RelPath) to the object of each of its lines:
	// Lines[f][i] is 1 + the index in Objects of line i+1's object, or 0
	// when no object wrote that line.
	Lines map[string][]int32
	// Files maps a file added for an object (its RelPath) to 1 + the index
	// of that object.
	Files map[string]int32
	// Reads are the reads of objects by other objects' renderings (Get,
	// Fetch while an object is current), in the order the render made
	// them; a pair may repeat.
	Reads []Read
}

// Read is one read of an object by the rendering of another: both are
// 1 + an index in Sources.Objects.
type Read struct {
	Reader, Object int32
}

// LineObject returns the object that wrote line (1-based) of file, or, for
// a file added for an object, that object.
func (s *Sources) LineObject(file string, line int) (ObjectRef, bool) {
	if s == nil {
		return ObjectRef{}, false
	}
	if lines := s.Lines[file]; line >= 1 && line <= len(lines) && lines[line-1] > 0 {
		return s.Objects[lines[line-1]-1], true
	}
	if i := s.Files[file]; i > 0 {
		return s.Objects[i-1], true
	}
	return ObjectRef{}, false
}

// Readers returns the objects whose rendering read obj, sorted.
func (s *Sources) Readers(obj ObjectRef) []ObjectRef {
	if s == nil {
		return nil
	}
	target := int32(slices.Index(s.Objects, obj) + 1)
	if target == 0 {
		return nil
	}
	var out []ObjectRef
	for _, r := range s.Reads {
		if r.Object == target && r.Reader != target {
			out = append(out, s.Objects[r.Reader-1])
		}
	}
	slices.SortFunc(out, ObjectRef.Compare)
	return slices.CompactFunc(out, func(a, b ObjectRef) bool { return a.Compare(b) == 0 })
}
