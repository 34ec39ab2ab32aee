package master

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// WorkerSession is an interactive session with HAProxy's current worker
// through the master CLI: the runtime API (set server, add map, set ssl
// cert, show servers state, ...) of the worker that runs the configuration
// the master loaded last. See "Runtime commands" in the package
// documentation for the protocol. A session is not safe for concurrent use;
// open one per sequence of commands and Close it.
type WorkerSession struct {
	client *Client // counts the session if it ends before an answer
	socket string
	conn   net.Conn
	r      *bufio.Reader
	pid    int
	stop   func() bool
	// timeout bounds each command (CommandTimeout).
	timeout time.Duration
}

// CommandError is a runtime command HAProxy refused: it answered with an
// error (severity emerg to err).
type CommandError struct {
	// Command is the command line (without its payload).
	Command string
	// Answer is HAProxy's answer, without the severity prefix.
	Answer string
}

// Error says which command HAProxy refused and why, e.g. `HAProxy refused
// "del server be/s1": Only servers in maintenance mode can be deleted.`.
func (e *CommandError) Error() string {
	return fmt.Sprintf("HAProxy refused %q: %s", e.Command, quoteShort(e.Answer))
}

// workerPrompt is the prompt of a session switched to a worker ("@1"): its
// PID, then the modes in parentheses when any is on.
var workerPrompt = regexp.MustCompile(`^([0-9]+)(\([a-z]*\))?> $`)

// masterPrompt is the master's own prompt ("master[ReloadFailed]> " after
// a failed reload).
var masterPrompt = regexp.MustCompile(`^master(\[[A-Za-z]+\])?(\([a-z]*\))?> $`)

// OpenWorker opens a session with the current worker: it connects to the
// master socket, turns the prompt on, switches to the worker ("@1") and
// turns on numeric severities ("set severity-output number"), which is how
// an error answer is told from a success. Opening is bounded by
// CommandTimeout and ctx; the context also bounds every later command (its
// end closes the connection).
func (c *Client) OpenWorker(ctx context.Context) (*WorkerSession, error) {
	if c.SocketPath == "" {
		return nil, errors.New("master: Client.SocketPath is empty")
	}
	timeout := c.commandTimeout()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "unix", c.SocketPath)
	if err != nil {
		return nil, c.wrap(dctx, "", err)
	}
	s := &WorkerSession{client: c, socket: c.SocketPath, conn: conn, r: bufio.NewReaderSize(conn, 64<<10), timeout: timeout}
	// Cancellation must interrupt a blocked read or write.
	s.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(cmd string, err error) (*WorkerSession, error) {
		s.Close()
		return nil, c.wrap(ctx, cmd, err)
	}
	if _, _, err := s.roundTrip(ctx, "prompt", "", masterPrompt); err != nil {
		return fail("prompt", err)
	}
	_, prompt, err := s.roundTrip(ctx, "@1", "", workerPrompt)
	if err != nil {
		return fail("@1", fmt.Errorf("switching to the current worker: %w", err))
	}
	s.pid, _ = strconv.Atoi(workerPrompt.FindStringSubmatch(prompt)[1])
	if _, err := s.Do(ctx, "set severity-output number", ""); err != nil {
		return fail("", err)
	}
	return s, nil
}

// PID is the process id of the worker the session talks to.
func (s *WorkerSession) PID() int { return s.pid }

// Close ends the session.
func (s *WorkerSession) Close() error {
	if s == nil || s.conn == nil {
		return nil
	}
	s.stop()
	err := s.conn.Close()
	s.conn = nil
	return err
}

// Do sends one command and returns the worker's answer. A non-empty
// payload is sent after "<<" on the command line, one line per line of
// payload, ended by an empty line: it must not contain an empty line (the
// worker would end the payload there) nor a carriage return. An answer
// with an error severity is returned as a *CommandError, the answer's
// text otherwise (without the severity prefix of a message). The command
// is bounded by CommandTimeout and by the context OpenWorker was given.
func (s *WorkerSession) Do(ctx context.Context, cmd, payload string) (string, error) {
	if s.conn == nil {
		return "", errors.New("master: the worker session is closed")
	}
	if strings.ContainsAny(cmd, "\r\n") {
		return "", fmt.Errorf("master socket %s: command %q: must be a single line", s.socket, cmd)
	}
	if strings.Contains(payload, "\r") || strings.Contains("\n"+payload, "\n\n") {
		return "", fmt.Errorf("master socket %s: command %q: the payload has an empty line or a carriage return", s.socket, cmd)
	}
	answer, _, err := s.roundTrip(ctx, cmd, payload, workerPrompt)
	if err != nil {
		// The connection is in an unknown state: no later command may
		// read this one's answer.
		s.Close()
		return "", fmt.Errorf("master socket %s: %s: %w", s.socket, cmd, err)
	}
	return answerOf(cmd, answer)
}

// roundTrip writes cmd (and its payload) and reads the answer up to the
// next prompt, which must match want; it returns the answer and the
// prompt.
func (s *WorkerSession) roundTrip(ctx context.Context, cmd, payload string, want *regexp.Regexp) (answer, prompt string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	_ = s.conn.SetDeadline(time.Now().Add(s.timeout))
	var b strings.Builder
	b.WriteString(cmd)
	if payload != "" {
		b.WriteString(" <<\n")
		b.WriteString(strings.TrimSuffix(payload, "\n"))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	// From here on, an error ends the session before the answer did.
	defer func() {
		if err != nil {
			s.client.abandoned.Add(1)
		}
	}()
	if _, err := io.WriteString(s.conn, b.String()); err != nil {
		return "", "", s.cause(ctx, err)
	}
	var buf []byte
	lineStart := 0 // where the last line of buf starts
	chunk := make([]byte, 32<<10)
	for {
		n, err := s.r.Read(chunk)
		if i := strings.LastIndexByte(string(chunk[:n]), '\n'); i >= 0 {
			lineStart = len(buf) + i + 1
		}
		buf = append(buf, chunk[:n]...)
		if err != nil {
			if len(buf) > 0 {
				return "", "", fmt.Errorf("%w after %s", s.cause(ctx, err), quoteShort(string(buf)))
			}
			return "", "", s.cause(ctx, err)
		}
		// A prompt ends the answer when it is the last line and nothing
		// follows it: HAProxy then waits for the next command. (No answer
		// line is a bare prompt.)
		if s.r.Buffered() > 0 {
			continue
		}
		last := strings.TrimLeft(string(buf[lineStart:]), "+ ") // payload continuation prompts
		if !strings.HasSuffix(last, "> ") {
			continue
		}
		switch {
		case want.MatchString(last):
			return string(buf[:lineStart]), last, nil
		case masterPrompt.MatchString(last) || workerPrompt.MatchString(last):
			return "", "", fmt.Errorf("unexpected prompt %q after %s", last, quoteShort(string(buf[:lineStart])))
		}
	}
}

// cause is err, or the context's error when the context ended it.
func (s *WorkerSession) cause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	if isTimeout(err) {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return err
}

// severity matches the prefix "set severity-output number" puts before a
// message: "[3]: " (syslog levels: 0 emerg ... 3 err, 4 warning, 6 info).
var severity = regexp.MustCompile(`^\[([0-7])\]: `)

// answerOf strips the payload continuation prompts and the severity prefix
// of an answer and turns an error severity into a *CommandError.
func answerOf(cmd, answer string) (string, error) {
	for strings.HasPrefix(answer, "+ ") {
		answer = answer[2:]
	}
	answer = strings.TrimRight(answer, "\n")
	m := severity.FindStringSubmatch(answer)
	if m == nil {
		return answer, nil
	}
	text := answer[len(m[0]):]
	if m[1][0] <= '3' {
		return "", &CommandError{Command: cmd, Answer: text}
	}
	return text, nil
}
