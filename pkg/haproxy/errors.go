package haproxy

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

// findingsReason joins findings into one capped reason.
func findingsReason(fs []Finding) string {
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

// PolicyError lists the policy violations of a bundle.
type PolicyError struct {
	// Findings are the violations in the order they were found.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *PolicyError) Error() string { return findingsReason(e.Findings) }

// SyntaxError lists the lines config-parser could not process.
type SyntaxError struct {
	// Findings are the unprocessed lines, in line order.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *SyntaxError) Error() string { return findingsReason(e.Findings) }

// SchemaError lists the client-native model validation failures.
type SchemaError struct {
	// Findings locate each failure at the line of its section.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *SchemaError) Error() string { return findingsReason(e.Findings) }

// SemanticError is a failed or aborted `haproxy -c` run.
type SemanticError struct {
	// Messages are the simplified error lines (see SimplifyOutput).
	Messages []string
	// ExitCode is haproxy's exit status, -1 when it did not exit normally.
	ExitCode int
	// Output is haproxy's raw combined output. It contains absolute paths:
	// log it for operators, never show it in an admission reason.
	Output string
	// Err is the cause when the run was aborted or could not start, e.g.
	// context.DeadlineExceeded.
	Err error
}

// Error returns the simplified messages joined by "; ", or the cause.
func (e *SemanticError) Error() string {
	if len(e.Messages) > 0 {
		return JoinReason(e.Messages)
	}
	if e.Err != nil {
		return "haproxy -c: " + e.Err.Error()
	}
	return "haproxy -c failed with exit code " + strconv.Itoa(e.ExitCode)
}

// Unwrap returns the cause of an aborted run.
func (e *SemanticError) Unwrap() error { return e.Err }
