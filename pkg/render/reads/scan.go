package reads

import (
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// Scan finds what the templates of root can read of the watched
// objects when the outputs (templates named entries) run with the render
// context as their dot. It interprets the templates abstractly: values are
// tracked as the store fields they come from (origins) and the maps the
// templates build with dict and list (nodes, one per place in the
// templates that builds one, with the values set into them), until nothing
// grows. A field counts as read once its value is used: printed, tested,
// compared, passed to a function, used as a map key or a store key. What
// the scan cannot follow makes it give up (Set.Everything).
func Scan(root *template.Template, entries []string) *Set {
	s := &readScan{
		root:     root,
		reads:    map[string]*fieldTrie{},
		dots:     map[string]*absValue{},
		vars:     map[varSite]*absValue{},
		nodes:    map[parse.Node]*absNode{},
		emitted:  &absNode{fields: map[string]*absValue{}, any: &absValue{}},
		returned: map[string]*absValue{},
		runs:     map[string]map[string]struct{}{},
	}
	ctx := &absNode{fields: map[string]*absValue{
		"resources":    {resources: true},
		"extraContext": {},
	}}
	for _, name := range entries {
		s.called(name, &absValue{nodes: set(ctx)})
	}
	for pass := 0; ; pass++ {
		if s.everything || pass == maxScanPasses {
			return &Set{everything: true}
		}
		s.grew = false
		for _, name := range slices.Sorted(maps.Keys(s.dots)) {
			if t := root.Lookup(name); t != nil && t.Tree != nil {
				dot := s.dots[name]
				s.current = name
				s.list(&scope{vars: []binding{{"$", dot}}}, dot, t.Tree.Root)
			}
		}
		if !s.grew {
			return &Set{everything: s.everything, stores: s.reads}
		}
	}
}

// maxScanPasses bounds the passes of Scan; templates that need more
// to settle read everything.
const maxScanPasses = 64

// maxScanOrigins bounds the fields one value may come from; a value that
// may come from more makes the templates read everything (see field).
const maxScanOrigins = 4096

// maxScanDepth bounds the field paths the scan tracks: a longer one (a
// recursive template walking ever deeper) counts as reading its prefix
// whole.
const maxScanDepth = 24

// origin is a value that comes from the objects of a store: the object's
// field at path (a list of field names; list elements are not
// distinguished), or, for a collection, the store's objects as a list.
type origin struct {
	store string
	path  string // field names joined by pathSep; "" is the object
	coll  bool
}

// pathSep joins the field names of an origin's path.
const pathSep = "\x00"

// fields returns o's path as field names. Every step of a path starts
// with pathSep, so that a key "" is not the object itself; a key holding
// pathSep is never a step (see field).
func (o origin) fields() []string {
	if o.path == "" {
		return nil
	}
	return strings.Split(o.path[len(pathSep):], pathSep)
}

// absNode is a map or list the templates build (dict, list), identified by
// the place in the templates that builds it: the values set into it under
// constant keys, and under any other key.
type absNode struct {
	fields map[string]*absValue
	any    *absValue
}

// absValue is what a template value may be: store fields, built maps,
// the .resources map, a store of it. The zero value is a value that
// carries nothing from the stores (a string, a number, a result of a
// function whose arguments were used).
type absValue struct {
	origins   map[origin]struct{}
	nodes     map[*absNode]struct{}
	resources bool
	handles   map[string]struct{}
}

// set returns a one-element set.
func set[K comparable](k K) map[K]struct{} { return map[K]struct{}{k: {}} }

// join adds what w may be to v and reports whether v grew.
func (v *absValue) join(w *absValue) bool {
	if w == nil || v == w {
		return false
	}
	grew := false
	add := func(dst *map[origin]struct{}, src map[origin]struct{}) {
		for k := range src {
			if _, ok := (*dst)[k]; !ok {
				if *dst == nil {
					*dst = map[origin]struct{}{}
				}
				(*dst)[k], grew = struct{}{}, true
			}
		}
	}
	add(&v.origins, w.origins)
	for n := range w.nodes {
		if _, ok := v.nodes[n]; !ok {
			if v.nodes == nil {
				v.nodes = map[*absNode]struct{}{}
			}
			v.nodes[n], grew = struct{}{}, true
		}
	}
	for h := range w.handles {
		if _, ok := v.handles[h]; !ok {
			if v.handles == nil {
				v.handles = map[string]struct{}{}
			}
			v.handles[h], grew = struct{}{}, true
		}
	}
	if w.resources && !v.resources {
		v.resources, grew = true, true
	}
	return grew
}

// varSite identifies a variable by the pipeline that declares it.
type varSite struct {
	pipe *parse.PipeNode
	i    int
}

// binding is a variable in scope.
type binding struct {
	name string
	v    *absValue
}

// scope is the variables in scope, innermost last.
type scope struct{ vars []binding }

// lookup returns the innermost variable called name.
func (sc *scope) lookup(name string) *absValue {
	for i := len(sc.vars) - 1; i >= 0; i-- {
		if sc.vars[i].name == name {
			return sc.vars[i].v
		}
	}
	return &absValue{}
}

// readScan is the state of one Scan.
type readScan struct {
	root       *template.Template
	reads      map[string]*fieldTrie
	everything bool
	grew       bool
	// dots holds, per template reached, everything it is called with.
	dots  map[string]*absValue
	vars  map[varSite]*absValue
	nodes map[parse.Node]*absNode
	// emitted holds every value emit may put in a channel: what emitted
	// returns.
	emitted *absNode
	// current is the template being scanned; returned holds, per
	// template, every value result may give in it; runs, per template, the
	// templates it runs with the template action: what includeValue of a
	// template returns is what result gives in it or in a template it
	// runs that way (returnedBy).
	current  string
	returned map[string]*absValue
	runs     map[string]map[string]struct{}
}

// returnedBy is every value result may give to includeValue of template
// name: in it, or in a template it runs with the template action (which
// runs in the same includeValue call), transitively.
func (s *readScan) returnedBy(name string) *absValue {
	v := &absValue{}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		v.join(s.returned[t])
		for u := range s.runs[t] {
			walk(u)
		}
	}
	walk(name)
	return v
}

// ran records that the template being scanned runs template name with
// the template action.
func (s *readScan) ran(name string) {
	r := s.runs[s.current]
	if r == nil {
		r = map[string]struct{}{}
		s.runs[s.current] = r
	}
	if _, ok := r[name]; !ok {
		r[name] = struct{}{}
		s.grew = true
	}
}

// called records that template name runs with dot.
func (s *readScan) called(name string, dot *absValue) {
	d := s.dots[name]
	if d == nil {
		d = &absValue{}
		s.dots[name] = d
		s.grew = true
	}
	if d.join(dot) {
		s.grew = true
	}
}

// read records that store key's field path is read, with everything
// below it.
func (s *readScan) read(key string, path []string) {
	t := s.reads[key]
	if t == nil {
		t = &fieldTrie{}
		s.reads[key] = t
	}
	if t.add(path) {
		s.grew = true
	}
}

// use records that v is used whole: every store field it may carry is
// read, with everything below it.
func (s *readScan) use(v *absValue) {
	s.useSeen(v, map[*absNode]bool{})
}

func (s *readScan) useSeen(v *absValue, seen map[*absNode]bool) {
	if v == nil {
		return
	}
	if v.resources {
		s.everything = true
	}
	for h := range v.handles {
		s.read(h, nil)
	}
	for o := range v.origins {
		s.read(o.store, o.fields())
	}
	for n := range v.nodes {
		if seen[n] {
			continue
		}
		seen[n] = true
		for _, f := range n.fields {
			s.useSeen(f, seen)
		}
		s.useSeen(n.any, seen)
	}
}

// touch records that store key's field path is evaluated (a shape read,
// see fieldTrie).
func (s *readScan) touch(key string, path []string) {
	t := s.reads[key]
	if t == nil {
		t = &fieldTrie{}
		s.reads[key] = t
	}
	if t.touch(path) {
		s.grew = true
	}
}

// test records that v is tested for truth (if, with, not, and, or,
// default): a field value is read whole (whether it is empty depends on
// all of it), but an object a store returned is never empty (it has at
// least its name), so testing it, or a collection, or a store, or a map
// or list the render built, asks only whether it is there: which objects
// exist, and which keys a built map holds, never an object's fields. What
// a built map holds is read where it is read.
func (s *readScan) test(v *absValue) {
	if v == nil {
		return
	}
	for o := range v.origins {
		if path := o.fields(); len(path) > 0 {
			s.read(o.store, path)
		}
	}
}

// node returns the node built at site.
func (s *readScan) node(site parse.Node) *absNode {
	n := s.nodes[site]
	if n == nil {
		n = &absNode{fields: map[string]*absValue{}, any: &absValue{}}
		s.nodes[site] = n
	}
	return n
}

// setIn records that n holds v under key (constant when isConst).
func (s *readScan) setIn(n *absNode, key string, isConst bool, v *absValue) {
	dst := n.any
	if isConst {
		dst = n.fields[key]
		if dst == nil {
			dst = &absValue{}
			n.fields[key] = dst
			s.grew = true
		}
	}
	if dst.join(v) {
		s.grew = true
	}
}

// field returns the value of field name of v. A value that may come from
// more than maxScanOrigins fields (a variable assigned its own fields in a
// loop, {{ $i = or $i.a $i.b }}, doubles them on every pass) ends the
// scan: the templates read everything.
func (s *readScan) field(v *absValue, name string) *absValue {
	out := &absValue{}
	if s.everything || len(v.origins) > maxScanOrigins {
		s.everything = true
		return out
	}
	for o := range v.origins {
		if o.coll {
			s.read(o.store, nil) // a field of a list: an error at render time
			continue
		}
		if strings.Count(o.path, pathSep) >= maxScanDepth || strings.Contains(name, pathSep) {
			s.read(o.store, o.fields())
			continue
		}
		p := origin{store: o.store, path: o.path + pathSep + name}
		s.touch(p.store, p.fields()) // evaluated: it can fail on a step that is not there
		out.join(&absValue{origins: set(p)})
	}
	for n := range v.nodes {
		out.join(n.fields[name])
		out.join(n.any)
	}
	if v.resources {
		out.join(&absValue{handles: set(name)})
	}
	for h := range v.handles {
		switch {
		case name == "List" || name == "Each" || name == "Fetch":
			out.join(&absValue{origins: set(origin{store: h, coll: true})})
		case name == "Get":
			out.join(&absValue{origins: set(origin{store: h})})
		case !storeMethods[name]:
			s.read(h, nil) // not a method: an error at render time
		}
	}
	return out
}

// anyChild returns the value of a key of v that is not a constant: the
// object fields it may come from are read whole, so nothing further needs
// tracking through the result, except the values of built maps.
func (s *readScan) anyChild(v *absValue) *absValue {
	out := &absValue{}
	for o := range v.origins {
		s.read(o.store, o.fields())
	}
	for n := range v.nodes {
		for _, f := range n.fields {
			out.join(f)
		}
		out.join(n.any)
	}
	if v.resources {
		s.everything = true
	}
	for h := range v.handles {
		s.read(h, nil)
	}
	return out
}

// element returns what ranging over v yields: the objects of a store
// collection (membership and order are the store's, never a field read),
// the elements of a list or map field (the field is read whole: ranging
// depends on its length and keys), the values of a built map.
func (s *readScan) element(v *absValue) *absValue {
	out := &absValue{}
	for o := range v.origins {
		if o.coll {
			out.join(&absValue{origins: set(origin{store: o.store})})
			continue
		}
		s.read(o.store, o.fields())
		out.join(&absValue{origins: set(o)})
	}
	for n := range v.nodes {
		for _, f := range n.fields {
			out.join(f)
		}
		out.join(n.any)
	}
	if v.resources {
		s.everything = true
	}
	for h := range v.handles {
		s.read(h, nil)
	}
	return out
}

// storeMethods are the methods of a *ResourceStore.
var storeMethods = map[string]bool{"List": true, "Each": true, "Fetch": true, "Get": true, "Len": true}

// chain follows a chain of field names from v; the last one may be a
// method of a store, called with args (which are used: they select
// objects).
func (s *readScan) chain(v *absValue, idents []string, args []*absValue) *absValue {
	for _, a := range args {
		s.use(a)
	}
	for _, id := range idents {
		v = s.field(v, id)
	}
	return v
}
