package shadow

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/render"
)

// firstDifference names where bundle got first differs from want: the
// output, its template, the line, and the object the source maps say wrote
// that line (want's, else got's). It never quotes content, which may hold
// a Secret's data.
func firstDifference(p *dryrun.Pipeline, want, got *bundle.Bundle) string {
	wantFiles, gotFiles := filesByPath(want), filesByPath(got)
	for _, f := range append(want.AllFiles(), got.AllFiles()...) {
		w, inWant := wantFiles[f.RelPath]
		g, inGot := gotFiles[f.RelPath]
		switch {
		case !inWant:
			return fmt.Sprintf("%s is in the incremental result only%s", f.RelPath, objectOf(got, f.RelPath, 0))
		case !inGot:
			return fmt.Sprintf("%s is missing from the incremental result%s", f.RelPath, objectOf(want, f.RelPath, 0))
		case w.Content == g.Content:
			continue
		}
		line := firstDifferentLine(w.Content, g.Content)
		where := fmt.Sprintf("%s line %d%s", f.RelPath, line, templateOf(p, f))
		if obj := objectOf(want, f.RelPath, line); obj != "" {
			return where + obj
		}
		return where + objectOf(got, f.RelPath, line)
	}
	return "the bundles differ" // unreachable for bundles of different hashes
}

func filesByPath(b *bundle.Bundle) map[string]bundle.File {
	out := map[string]bundle.File{}
	for _, f := range b.AllFiles() {
		out[f.RelPath] = f
	}
	return out
}

// firstDifferentLine is the 1-based number of the first line where a and b
// differ.
func firstDifferentLine(a, b string) int {
	for line := 1; ; line++ {
		ai, bi := strings.IndexByte(a, '\n'), strings.IndexByte(b, '\n')
		if ai < 0 || bi < 0 || a[:ai] != b[:bi] {
			return line
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

// templateOf names the template that renders f, when the config has one
// for it (a file added with addFile has none).
func templateOf(p *dryrun.Pipeline, f bundle.File) string {
	spec := p.Config.Spec
	var declared bool
	switch f.Kind {
	case "":
		declared = true
	case bundle.KindMap:
		_, declared = spec.Maps[f.Name]
	case bundle.KindFile:
		_, declared = spec.Files[f.Name]
	case bundle.KindCert:
		_, declared = spec.SSLCertificates[f.Name]
	}
	if !declared {
		return " (added by addFile)"
	}
	return " (template " + render.TemplateName(f.Kind, f.Name) + ")"
}

// objectOf names the object that wrote line of file ("" when none did, or
// line 0 of a file not added for an object).
func objectOf(b *bundle.Bundle, file string, line int) string {
	if ref, ok := b.Sources().LineObject(file, line); ok {
		return ", written for " + ref.String()
	}
	return ""
}

// reasonPosition matches the file and line a check reason starts with
// ("haproxy.cfg:12: ...", "host.map:3: ...": htc's simplified messages).
var reasonPosition = regexp.MustCompile(`^([^\s:]+):(\d+):`)

// position is where a check reason points in b, without the message:
// "haproxy.cfg line 12", or "a line htc cannot place".
func position(b *bundle.Bundle, reason string) string {
	m := reasonPosition.FindStringSubmatch(reason)
	if m == nil {
		return "a line htc cannot place"
	}
	line, _ := strconv.Atoi(m[2])
	for _, f := range b.AllFiles() {
		if f.RelPath == m[1] || path.Base(f.RelPath) == m[1] {
			return fmt.Sprintf("%s line %d", f.RelPath, line)
		}
	}
	return "a line htc cannot place"
}
