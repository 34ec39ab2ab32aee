package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxReasonLen caps the length in bytes of a simplified reason; longer
// reasons are cut at a rune boundary and end with "…".
const MaxReasonLen = 512

// Finding is one problem at one place of a bundle.
type Finding struct {
	// File is the bundle-relative file name ("haproxy.cfg", "maps/x.map").
	File string
	// Line is the 1-based line number, 0 when unknown.
	Line int
	// Key is the AllowedDirectives entry that would permit this finding;
	// empty when none can.
	Key string
	// Message describes the problem without the location.
	Message string
}

// String formats the finding as "file:line: message".
func (f Finding) String() string {
	var b strings.Builder
	if f.File != "" {
		b.WriteString(f.File)
		if f.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(f.Line))
		}
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	return b.String()
}

// FindingsReason joins findings into one reason, capped at MaxReasonLen.
func FindingsReason(fs []Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return JoinReason(parts)
}

// JoinReason joins messages with "; " and caps the result at MaxReasonLen.
func JoinReason(msgs []string) string {
	return capReason(strings.Join(msgs, "; "))
}

// capReason shortens s to MaxReasonLen bytes, ending it with "…".
func capReason(s string) string {
	if len(s) <= MaxReasonLen {
		return s
	}
	const ell = "…"
	cut := MaxReasonLen - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}

// Error lists the policy violations of a bundle.
type Error struct {
	// Findings are the violations in the order they were found.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *Error) Error() string { return FindingsReason(e.Findings) }

// Location is where the first finding is (phase.Located; see
// FindingsLocation).
func (e *Error) Location() string { return FindingsLocation(e.Findings) }

// FindingsLocation is where the first of fs is: "FILE:LINE", the file
// alone without a line, "" without a file.
func FindingsLocation(fs []Finding) string {
	if len(fs) == 0 || fs[0].File == "" {
		return ""
	}
	if fs[0].Line > 0 {
		return fs[0].File + ":" + strconv.Itoa(fs[0].Line)
	}
	return fs[0].File
}
