// Package bundle is htc's rendered output: one complete HAProxy
// configuration (haproxy.cfg plus the maps, files and certificates it
// references), the rules for the names of its files, its content hash and
// how it is written into a directory. The renderer produces a Bundle, the
// checker checks it, the publisher writes it; none of them needs the others
// to agree on what a Bundle is.
package bundle

import (
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/haproxy-template/htc/pkg/resourcestatus"
)

// Kind of a bundle file, as used by pathFor and assertion targets.
type Kind string

// The kinds of files a Bundle holds besides haproxy.cfg.
const (
	// KindMap is an HAProxy map file (target "map:<name>").
	KindMap Kind = "map"
	// KindFile is an auxiliary file such as an error page (target "file:<name>").
	KindFile Kind = "file"
	// KindCert is a PEM certificate bundle (target "cert:<name>").
	KindCert Kind = "cert"
)

// ConfigFileName is the name of the main configuration file inside a bundle.
const ConfigFileName = "haproxy.cfg"

// StatusTarget is the assertion target of the documents spec.resourceStatus
// rendered (Bundle.Status, as resourcestatus.Marshal prints them).
const StatusTarget = "resourceStatus"

// Bundle is one complete rendered HAProxy configuration: haproxy.cfg plus the
// maps, files and certificates it references. BaseDir is the directory the
// bundle was rendered for: pathFor returned paths under it, and the bundle is
// only valid when written there (see Path).
type Bundle struct {
	// BaseDir is the absolute directory that pathFor resolved paths against.
	BaseDir string
	// Config is the rendered haproxy.cfg.
	Config string
	// Maps are rendered map files by name.
	Maps map[string]string
	// Files are rendered auxiliary files by name.
	Files map[string]string
	// Certs are rendered PEM bundles by name.
	Certs map[string]string
	// Status holds the documents spec.resourceStatus rendered (nil without
	// that template): the status of watched objects, from the same render.
	// They are not files of the bundle and take no part in Hash.
	Status []resourcestatus.Document
	// Warnings are what the templates warned about (the template function
	// warn), each about one object, in render order: an admission that
	// changes the object and is allowed shows them. Not in Hash.
	Warnings []Warning
	// sources returns the source map (see Sources); nil: none.
	sources func() *Sources
}

// Warning is one warning a template gave about an object (warn).
type Warning struct {
	// Object is the object it is about (Store is empty: the template
	// named the object, not the store it came from).
	Object ObjectRef
	// Message is what the user reads.
	Message string
}

// WarningsAbout returns the messages of the bundle's warnings about an
// object of kind, namespace and name, each once, in render order.
func (b *Bundle) WarningsAbout(kind, namespace, name string) []string {
	if b == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range b.Warnings {
		o := w.Object
		if o.Kind == kind && o.Namespace == namespace && o.Name == name && !seen[w.Message] {
			seen[w.Message] = true
			out = append(out, w.Message)
		}
	}
	return out
}

// Sources says which objects produced which parts of the bundle (nil when
// the renderer kept no source map). A renderer may build it on first use
// (SetSourcesFunc); it is not part of Hash.
func (b *Bundle) Sources() *Sources {
	if b == nil || b.sources == nil {
		return nil
	}
	return b.sources()
}

// SetSources sets the source map to s.
func (b *Bundle) SetSources(s *Sources) { b.sources = func() *Sources { return s } }

// SetSourcesFunc sets the source map to what build returns, built once on
// first use (safe for concurrent use).
func (b *Bundle) SetSourcesFunc(build func() *Sources) { b.sources = sync.OnceValue(build) }

// Dir returns the sub-directory of a bundle that holds files of kind k.
func Dir(k Kind) string {
	switch k {
	case KindMap:
		return "maps"
	case KindCert:
		return "certs"
	default:
		return "files"
	}
}

// Path is the absolute path a file of kind k named name has inside a bundle
// rooted at baseDir. It is what the template function pathFor returns.
func Path(baseDir string, k Kind, name string) string {
	return filepath.Join(baseDir, Dir(k), filepath.FromSlash(name))
}

// File is one file of a bundle with its path relative to BaseDir.
type File struct {
	// RelPath is the slash-separated path relative to the bundle's BaseDir.
	RelPath string
	// Kind is empty for haproxy.cfg.
	Kind Kind
	// Name is the name the template used (the map, file or cert key).
	Name string
	// Content is the rendered text.
	Content string
}

// AllFiles lists every file of the bundle, haproxy.cfg first, then maps, files
// and certificates, each group sorted by name.
func (b *Bundle) AllFiles() []File {
	out := []File{{RelPath: ConfigFileName, Name: ConfigFileName, Content: b.Config}}
	add := func(k Kind, m map[string]string) {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, File{RelPath: Dir(k) + "/" + n, Kind: k, Name: n, Content: m[n]})
		}
	}
	add(KindMap, b.Maps)
	add(KindFile, b.Files)
	add(KindCert, b.Certs)
	return out
}

// Target returns the content an assertion target names: "haproxy.cfg",
// "map:<name>", "file:<name>", "cert:<name>", or StatusTarget (the status
// documents, "" when there are none). ok is false when the bundle has no
// such file.
func (b *Bundle) Target(target string) (content string, ok bool) {
	if target == "" || target == ConfigFileName {
		return b.Config, true
	}
	if target == StatusTarget {
		s, err := resourcestatus.Marshal(b.Status)
		return s, err == nil
	}
	for _, k := range []Kind{KindMap, KindFile, KindCert} {
		prefix := string(k) + ":"
		if len(target) > len(prefix) && target[:len(prefix)] == prefix {
			var m map[string]string
			switch k {
			case KindMap:
				m = b.Maps
			case KindFile:
				m = b.Files
			default:
				m = b.Certs
			}
			c, ok := m[target[len(prefix):]]
			return c, ok
		}
	}
	return "", false
}

// Relocated returns a copy of b rendered for baseDir instead of b.BaseDir:
// BaseDir is baseDir, and in the content of every file (haproxy.cfg, maps,
// files and certificates) each occurrence of the old BaseDir followed by a
// path separator is replaced by baseDir followed by the separator, so
// "/tmp/x/htc-check-1/maps/host.map" becomes "/etc/haproxy/maps/host.map".
// An occurrence not followed by a separator (such as a longer directory name
// "/tmp/x/htc-check-12") is left alone. When b.BaseDir is empty or already
// baseDir (trailing separators aside) the result is a plain copy. b is not
// modified.
//
// It exists because a bundle is rendered and checked in a private workspace
// (haproxy.NewWorkspace), where pathFor returned paths under the workspace,
// and the same checked bundle is then published into the directory HAProxy
// reads. Rewriting the paths afterwards is safe because the workspace path is
// random and created at check time: user-controlled content (templates,
// resources) cannot predict it, so every occurrence is one pathFor produced.
func (b *Bundle) Relocated(baseDir string) *Bundle {
	out := &Bundle{
		BaseDir:  baseDir,
		Config:   b.Config,
		Maps:     copyContents(b.Maps),
		Files:    copyContents(b.Files),
		Certs:    copyContents(b.Certs),
		Status:   b.Status,
		Warnings: b.Warnings,
		sources:  b.sources,
	}
	oldPrefix, newPrefix := dirPrefix(b.BaseDir), dirPrefix(baseDir)
	if b.BaseDir == "" || oldPrefix == newPrefix {
		return out
	}
	r := strings.NewReplacer(oldPrefix, newPrefix)
	out.Config = r.Replace(out.Config)
	for _, m := range []map[string]string{out.Maps, out.Files, out.Certs} {
		for name, content := range m {
			m[name] = r.Replace(content)
		}
	}
	return out
}

// copyContents copies a name-to-content map; nil stays nil.
func copyContents(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// dirPrefix is dir without trailing path separators, followed by exactly one:
// the text every path inside dir starts with ("/" for the file system root).
func dirPrefix(dir string) string {
	sep := string(filepath.Separator)
	return strings.TrimRight(dir, sep) + sep
}
