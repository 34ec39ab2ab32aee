package haproxy

import (
	"regexp"
	"strconv"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// Finding is one problem at one place of a bundle: the policy's and the
// syntax and schema phases' findings are alike.
type Finding = policy.Finding

// MaxReasonLen caps the length in bytes of a simplified reason (see
// policy.MaxReasonLen).
const MaxReasonLen = policy.MaxReasonLen

// JoinReason joins messages with "; " and caps the result at MaxReasonLen.
func JoinReason(msgs []string) string { return policy.JoinReason(msgs) }

// capReason shortens s to MaxReasonLen bytes, ending it with "…".
func capReason(s string) string { return policy.JoinReason([]string{s}) }

// SyntaxError lists the lines config-parser could not process.
type SyntaxError struct {
	// Findings are the unprocessed lines, in line order.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *SyntaxError) Error() string { return policy.FindingsReason(e.Findings) }

// Location is where the first finding is (phase.Located).
func (e *SyntaxError) Location() string { return policy.FindingsLocation(e.Findings) }

// SchemaError lists the client-native model validation failures.
type SchemaError struct {
	// Findings locate each failure at the line of its section.
	Findings []Finding
}

// Error returns the findings joined by "; ".
func (e *SchemaError) Error() string { return policy.FindingsReason(e.Findings) }

// Location is where the first finding is (phase.Located).
func (e *SchemaError) Location() string { return policy.FindingsLocation(e.Findings) }

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

// Location is the "FILE:LINE" the first message begins with
// (phase.Located), "" when it begins with none.
func (e *SemanticError) Location() string {
	if len(e.Messages) > 0 {
		if m := messageFileLine.FindStringSubmatch(e.Messages[0]); m != nil {
			return m[1]
		}
	}
	return ""
}

// messageFileLine is the location prefix of a simplified HAProxy message.
var messageFileLine = regexp.MustCompile(`^([A-Za-z0-9._/-]+:\d+):`)
