package cfgcond

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// Text is the condition readcfgfile() evaluates on the .if or .elif line lt: the words after the
// directive joined by single spaces, every NUL inside a word a space too,
// and a final space when a separator followed the last word.
func Text(lt cfgtext.Line) string {
	if len(lt.Words) < 2 {
		return ""
	}
	var b strings.Builder
	for i, w := range lt.Words[1:] {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.Whole != "" {
			b.WriteString(strings.ReplaceAll(w.Whole, "\x00", " "))
		} else {
			b.WriteString(w.Text)
		}
	}
	if lt.TrailingSep {
		b.WriteByte(' ')
	}
	return b.String()
}
