package dataplane

import (
	"fmt"
	"slices"
	"sort"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// The kinds of Reason: the label values of the reload reasons the
// controller counts.
const (
	// ReasonStructure: haproxy.cfg changed beyond server lines.
	ReasonStructure = "structure"
	// ReasonServers: a server change the runtime API cannot make as a
	// reload would (see the package documentation).
	ReasonServers = "servers"
	// ReasonFiles: a file was added or removed, or changed and is not a
	// map, certificate or CA file HAProxy reports (or its content cannot
	// be sent as it reads the file).
	ReasonFiles = "files"
)

// Reason says why a change needs a reload. Nothing was sent to HAProxy.
type Reason struct {
	// Kind is one of the Reason* constants.
	Kind string
	// Detail says what, for a log line: a line number, a backend or
	// server name, a file name; never the content of a line or a file.
	Detail string
}

// Error is "<kind>: <detail>".
func (r *Reason) Error() string { return r.Kind + ": " + r.Detail }

// ServerOp is what a change does to one server.
type ServerOp string

// The server operations.
const (
	// OpAdd: add server, enable its checks, set it ready unless disabled.
	OpAdd ServerOp = "add"
	// OpRemove: set it to maintenance, del server.
	OpRemove ServerOp = "remove"
	// OpUpdate: set server addr, weight and state, as they changed.
	OpUpdate ServerOp = "update"
	// OpReplace: remove it and add it with its new line (an option
	// other than the weight and the state changed).
	OpReplace ServerOp = "replace"
)

// ServerChange is one server to change.
type ServerChange struct {
	Backend, Server string
	Op              ServerOp
	old, new        *server
}

// FileChange is a map, file or certificate whose content changed. How it
// is applied depends on what HAProxy uses it as, which Apply asks it.
type FileChange struct {
	Kind bundle.Kind
	Name string
	// Path is the absolute path the configuration names it by (the
	// bundle's BaseDir, pathFor).
	Path    string
	Content string
	// old is the content HAProxy runs; order how haproxy.cfg reads the
	// file as a map (readMapOrder): together they say whether one command
	// changes it (mapDelta).
	old   string
	order mapOrder
}

// Plan is how the runtime API brings HAProxy from running one bundle to
// running another, when a reload is not needed.
type Plan struct {
	Servers []ServerChange
	Files   []FileChange
	// bufsize is HAProxy's CLI buffer (cliBufsize).
	bufsize int
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Servers) == 0 && len(p.Files) == 0 }

// Diff compares the bundle HAProxy runs (old) with the one to run (new)
// and returns the runtime changes that make HAProxy run new as a reload
// would, or the Reason it must reload. The decision reads the bundles
// only: haproxy.cfg must be equal but for server lines of eligible
// backends (see the package documentation); maps, files and certificates
// that changed are listed for Apply, which asks HAProxy what each one is.
// A nil old bundle (what HAProxy runs is not known) needs a reload.
func Diff(old, new *bundle.Bundle) (*Plan, *Reason) {
	switch {
	case old == nil:
		return nil, &Reason{Kind: ReasonStructure, Detail: "what HAProxy runs is not known"}
	case old.BaseDir != new.BaseDir:
		return nil, &Reason{Kind: ReasonStructure, Detail: "the bundle moved to another directory"}
	}
	p := &Plan{bufsize: cliBufsize(new.Config)}
	if old.Config != new.Config {
		if r := p.diffServers(readConfig(old.Config), readConfig(new.Config)); r != nil {
			return nil, r
		}
	}
	if r := p.diffFiles(old, new); r != nil {
		return nil, r
	}
	return p, nil
}

// diffServers fills p.Servers, or says why the configurations differ in
// more than servers that can change at run time.
func (p *Plan) diffServers(vo, vn *view) *Reason {
	if c := vn.conditional + vo.conditional; c != "" {
		return &Reason{Kind: ReasonStructure, Detail: "haproxy.cfg has conditional blocks or directives starting with '.', which htc does not evaluate"}
	}
	if i := firstDifference(vo.rest, vn.rest); i >= 0 {
		at := "its end"
		if i < len(vn.restLine) {
			at = fmt.Sprintf("line %d", vn.restLine[i])
		}
		return &Reason{Kind: ReasonStructure, Detail: "haproxy.cfg changed beyond server lines, at " + at}
	}
	for _, name := range vn.order {
		po, pn := vo.proxies[name], vn.proxies[name]
		if slices.EqualFunc(po.servers, pn.servers, func(a, b *server) bool { return a.line == b.line }) {
			continue
		}
		for _, pr := range []*proxy{pn, po} {
			if pr.ineligible != "" {
				return &Reason{Kind: ReasonServers, Detail: "backend " + policy.Shorten(name) + ": " + pr.ineligible}
			}
		}
		if r := p.diffProxy(name, po, pn); r != nil {
			return r
		}
	}
	return nil
}

// diffProxy adds the changes of one eligible proxy's servers.
func (p *Plan) diffProxy(name string, po, pn *proxy) *Reason {
	reason := func(s *server, why string) *Reason {
		return &Reason{Kind: ReasonServers, Detail: "backend " + policy.Shorten(name) + ", server " + policy.Shorten(s.name) + ": " + why}
	}
	for _, o := range po.servers {
		if _, kept := pn.byName[o.name]; !kept {
			if !validName(o.name) {
				return reason(o, "its name has characters htc does not send to the runtime API")
			}
			p.Servers = append(p.Servers, ServerChange{Backend: name, Server: o.name, Op: OpRemove, old: o})
		}
	}
	for _, n := range pn.servers {
		o := po.byName[n.name]
		switch {
		case o != nil && slices.Equal(o.options, n.options) && o.addr == n.addr && o.weight == n.weight && o.disabled == n.disabled && o.opaque == n.opaque:
			// The same words (a comment or blanks changed).
		case n.opaque != "":
			return reason(n, n.opaque)
		case !n.ipPort:
			return reason(n, "its address is not an IP address and a port (add server and set server do not resolve names)")
		case o == nil:
			p.Servers = append(p.Servers, ServerChange{Backend: name, Server: n.name, Op: OpAdd, new: n})
		case sameButRuntime(o, n):
			p.Servers = append(p.Servers, ServerChange{Backend: name, Server: n.name, Op: OpUpdate, old: o, new: n})
		default:
			p.Servers = append(p.Servers, ServerChange{Backend: name, Server: n.name, Op: OpReplace, old: o, new: n})
		}
	}
	return nil
}

// diffFiles fills p.Files with the maps, files and certificates whose
// content changed; one added or removed needs a reload (HAProxy reads
// files when it loads the configuration, a directory of certificates
// included).
func (p *Plan) diffFiles(old, new *bundle.Bundle) *Reason {
	for _, g := range []struct {
		kind     bundle.Kind
		old, new map[string]string
	}{{bundle.KindMap, old.Maps, new.Maps}, {bundle.KindFile, old.Files, new.Files}, {bundle.KindCert, old.Certs, new.Certs}} {
		for _, name := range sortedKeys(g.old) {
			if _, ok := g.new[name]; !ok {
				return &Reason{Kind: ReasonFiles, Detail: fmt.Sprintf("%s %s was removed", g.kind, policy.Shorten(name))}
			}
		}
		for _, name := range sortedKeys(g.new) {
			content, had := g.old[name]
			switch {
			case !had:
				return &Reason{Kind: ReasonFiles, Detail: fmt.Sprintf("%s %s was added", g.kind, policy.Shorten(name))}
			case content != g.new[name]:
				path := bundle.Path(new.BaseDir, g.kind, name)
				p.Files = append(p.Files, FileChange{Kind: g.kind, Name: name, Path: path, Content: g.new[name], old: content, order: readMapOrder(new.Config, path)})
			}
		}
	}
	return nil
}

// firstDifference is the index of the first line a and b differ in, -1
// when they are equal.
func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
