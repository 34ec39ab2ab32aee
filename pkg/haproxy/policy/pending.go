package policy

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// pendingKind is how HAProxy parses a bundle file a directive names.
type pendingKind uint8

const (
	// kindCrtList: a crt-list (src/ssl_crtlist.c crtlist_parse_file).
	kindCrtList pendingKind = iota
	// kindSPOE: a SPOE configuration (src/flt_spoe.c, read by
	// readcfgfile() with only the spoe-* sections).
	kindSPOE
)

// pendingFile is a bundle file to scan after haproxy.cfg, with the
// working directories and base directories HAProxy parses it with (it
// does while it parses the line that names it).
type pendingFile struct {
	abs   string
	kind  pendingKind
	dirs  []string
	bases bases
}

// queue schedules a bundle file for scanning, once per context. A file
// outside the bundle was accepted only under an operator's "path:" entry;
// its content is the operator's.
func (s *policyScan) queue(abs string, use refUse) {
	p := pendingFile{abs: abs, kind: use.kind, dirs: use.dirs, bases: s.bases}
	if p.dirs == nil {
		p.dirs = s.cwd.dirs
	}
	key := fmt.Sprintf("%s\x00%d\x00%q\x00%+v", abs, p.kind, p.dirs, p.bases)
	if !s.isBundleFile(abs) || s.scanned[key] {
		return
	}
	s.scanned[key] = true
	s.pending = append(s.pending, p)
}

// scanPending scans the queued files.
func (s *policyScan) scanPending() {
	for i := 0; i < len(s.pending); i++ {
		p := s.pending[i]
		name := filepath.ToSlash(relName(s.baseDir, p.abs))
		s.cwd.dirs, s.bases = p.dirs, p.bases
		switch p.kind {
		case kindCrtList:
			s.inCrtList = true
			s.scanCrtList(name, s.files[p.abs])
			s.inCrtList = false
		case kindSPOE:
			s.scanCfgText(name, s.files[p.abs], inventory.SPOEHeaders)
		}
	}
}

// scanCrtList checks a crt-list: each line is "<crt> [<options>] [<sni
// filter>...]", words split at isspace() without quoting, '[' and ']'
// delimit the options, '#' in the first column starts a comment
// (crtlist_parse_file, crtlist_parse_line). Relative paths are checked
// both against the current directory and the applicable base.
func (s *policyScan) scanCrtList(name, content string) {
	for n, line := range Lines(content) {
		at := loc{file: name, line: n}
		if strings.IndexByte(line, 0) >= 0 {
			s.add(at, "", "NUL byte in crt-list")
		}
		if line == "" || line[0] == '#' || line[0] == '\r' {
			continue
		}
		words, opts := crtListWords(line)
		if len(words) == 0 {
			continue
		}
		if !strings.HasPrefix(words[0], "@") {
			s.crtListPath(at, "crt-list certificate", words[0], inventory.BaseCrt)
		}
		s.crtListOptions(at, opts)
	}
}

// crtListWords splits a crt-list line: words outside brackets, and the
// words between '[' and ']'. It stops at a NUL, as HAProxy's C string does.
func crtListWords(line string) (words, opts []string) {
	inOpts := false
	start := -1
	flush := func(end int) {
		if start >= 0 {
			if inOpts {
				opts = append(opts, line[start:end])
			} else {
				words = append(words, line[start:end])
			}
		}
		start = -1
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == 0:
			flush(i)
			return words, opts
		case cfgtext.IsCSpace(c):
			flush(i)
		case c == '[' || c == ']':
			flush(i)
			inOpts = c == '['
		case start < 0:
			start = i
		}
	}
	flush(len(line))
	return words, opts
}

// crtListOptions walks the bracketed options of a crt-list line.
func (s *policyScan) crtListOptions(at loc, opts []string) {
	for i := 0; i < len(opts); i++ {
		n, ok := inventory.CRTListOptions[opts[i]]
		if !ok {
			s.add(at, "", "crt-list: unknown option '"+s.short(opts[i])+"'")
			return
		}
		if e, isFile := entries[entryKey{"crt-list", opts[i]}]; isFile && i+1 < len(opts) {
			v := opts[i+1]
			if !(v == "@system-ca" && (opts[i] == "ca-file" || opts[i] == "ca-verify-file")) {
				s.crtListPath(at, "crt-list "+opts[i], v, e.Base)
			}
		}
		i += n
	}
}

// crtListPath checks a crt-list path against the current directory and
// against base.
func (s *policyScan) crtListPath(at loc, what, p string, base inventory.Base) {
	s.checkRef(at, fileRef{directive: what, path: p, mode: refRead}, refUse{})
	if base != inventory.BaseNone {
		s.checkRef(at, fileRef{directive: what, path: p, mode: refRead, base: base}, refUse{})
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
