package master

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ReloadResult describes a reload that HAProxy finished.
type ReloadResult struct {
	// Before is `show proc` just before the reload was requested.
	Before *Status
	// After is the first `show proc` that showed the reload finished. It is
	// nil only if HAProxy answered "Success=0" and `show proc` then failed.
	After *Status
	// Duration is the time from sending "reload" to seeing it finished.
	Duration time.Duration
}

// ReloadError means HAProxy refused the new configuration: it loaded nothing
// new and the old workers serve on.
type ReloadError struct {
	// Failed is the master's count of failed reloads since the last
	// successful one ("[failed: N]"); at least 1.
	Failed int
	// Output is what HAProxy said about the failure: the startup logs after
	// "--" in a "Success=0" answer (HAProxy 2.7 and later), or, when that
	// answer was lost, `show startup-logs`. HAProxy 2.6 answers nothing;
	// its reasons are then only on its own stderr.
	Output string
}

// Error says that the configuration was rejected and, when HAProxy gave
// them, why, e.g. "haproxy rejected the new configuration (1 failed reload
// since the last success); the previous workers keep serving: parsing
// [/etc/haproxy/htc/haproxy.cfg:14] : unknown keyword 'bogus' in 'frontend'
// section" (the alert lines of Output, without level and PID).
func (e *ReloadError) Error() string {
	var b strings.Builder
	b.WriteString("haproxy rejected the new configuration")
	if e.Failed > 0 {
		s := "s"
		if e.Failed == 1 {
			s = ""
		}
		fmt.Fprintf(&b, " (%d failed reload%s since the last success)", e.Failed, s)
	}
	b.WriteString("; the previous workers keep serving")
	if out := summarizeOutput(e.Output); out != "" {
		b.WriteString(": ")
		b.WriteString(out)
	}
	return b.String()
}

// Reload asks the master to reload and waits until it has: the master's
// reload counter went past the value before the reload, and either a new
// worker is listed (success) or the master counts a failed reload. It
// returns a *ReloadError when HAProxy refused the new configuration (failed
// counter > 0 after the reload, or a "Success=0" answer), keeping its old
// workers; the *ReloadResult is returned along with it. Any other error
// comes with a nil result.
//
// Reload waits at most ReloadTimeout (and no longer than ctx allows). When
// that runs out first the error wraps the context's error
// (context.DeadlineExceeded for a timeout) and says that the reload was
// requested but not seen to finish. If the master answering after the
// reload has another PID than before (HAProxy was restarted rather than
// reloaded), Reload returns an error at once, since the reload counter
// started again from 0.
//
// A successful reload re-executed the master: Abandoned no longer counts
// the connections abandoned before it started.
func (c *Client) Reload(ctx context.Context) (*ReloadResult, error) {
	abandoned := c.abandoned.Load() // the connections this reload frees
	before, err := c.ShowProc(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the master state before reloading: %w", err)
	}

	timeout := c.reloadTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()

	// HAProxy 2.7+ answers only once the reload is done, so the reload
	// command gets the whole reload timeout rather than CommandTimeout.
	answer, sent, err := c.exchange(ctx, "reload", timeout, hasOutcome)
	if !sent {
		return nil, fmt.Errorf("requesting a reload: %w", err)
	}
	// The command was written: even if reading the answer failed, the
	// master may be reloading, so look at what it does.
	lastProblem := err

	outcome, output := parseReloadAnswer(answer)
	if outcome == outcomeFailed {
		res := &ReloadResult{Before: before, Duration: time.Since(start)}
		failed := 1
		if after, err := c.ShowProc(ctx); err == nil {
			res.After = after
			failed = max(failed, after.FailedReloads)
		}
		return res, &ReloadError{Failed: failed, Output: output}
	}
	var notes []string // for the error if the reload is not seen to finish
	if outcome == outcomeUnknown && strings.TrimSpace(answer) != "" {
		notes = append(notes, "unexpected answer to reload: "+quoteShort(answer))
	}
	deadline, _ := ctx.Deadline()

	timer := time.NewTimer(c.pollInterval())
	timer.Stop()
	defer timer.Stop()
	for {
		st, err := c.ShowProc(ctx)
		switch {
		case err != nil:
			// An error caused by the deadline itself says less than the
			// problem seen before it.
			if lastProblem == nil || (ctx.Err() == nil && time.Now().Before(deadline)) {
				lastProblem = err
			}
		case st.Master.PID != before.Master.PID:
			return nil, fmt.Errorf("master socket %s: the master changed from PID %d to PID %d during the reload: haproxy was restarted",
				c.SocketPath, before.Master.PID, st.Master.PID)
		case st.Master.Reloads <= before.Master.Reloads:
			lastProblem = fmt.Errorf("the master's reload counter is still %d", st.Master.Reloads)
		default:
			res := &ReloadResult{Before: before, After: st, Duration: time.Since(start)}
			if st.FailedReloads > 0 {
				if output == "" {
					// The answer to "reload" was lost (or the master
					// predates it): ask for the startup logs of the
					// failed load instead.
					output = c.startupLogs(ctx)
				}
				return res, &ReloadError{Failed: st.FailedReloads, Output: output}
			}
			if hasNewWorker(before, st) {
				c.abandoned.Add(-abandoned) // the master re-executed
				return res, nil
			}
			lastProblem = fmt.Errorf("the master's reload counter is %d but no new worker is listed", st.Master.Reloads)
		}

		timer.Reset(c.pollInterval())
		select {
		case <-ctx.Done():
			if lastProblem != nil {
				notes = append(notes, lastProblem.Error())
			}
			detail := ""
			if len(notes) > 0 {
				detail = " (" + strings.Join(notes, "; ") + ")"
			}
			return nil, fmt.Errorf("master socket %s: reload requested but not seen to finish after %s%s: %w",
				c.SocketPath, time.Since(start).Round(time.Millisecond), detail, ctx.Err())
		case <-timer.C:
		}
	}
}

// startupLogs returns the master's `show startup-logs`: the messages of the
// latest startup or reload, including a failed one (HAProxy 2.7 and later
// built with USE_SHM_OPEN, as Debian's 3.0 is). It returns "" when the
// command fails or is unknown.
func (c *Client) startupLogs(ctx context.Context) string {
	out, err := c.Command(ctx, "show startup-logs")
	out = strings.TrimSpace(out)
	if err != nil || strings.HasPrefix(out, "Unknown command") {
		return ""
	}
	return out
}

// hasNewWorker reports whether after lists a current worker that before did
// not list at all.
func hasNewWorker(before, after *Status) bool {
	old := make(map[int]bool, len(before.Workers)+len(before.OldWorkers))
	for _, p := range before.Workers {
		old[p.PID] = true
	}
	for _, p := range before.OldWorkers {
		old[p.PID] = true
	}
	for _, p := range after.Workers {
		if !old[p.PID] {
			return true
		}
	}
	return false
}

type reloadOutcome int

const (
	outcomeUnknown reloadOutcome = iota // HAProxy 2.6: no answer
	outcomeSucceeded
	outcomeFailed
)

// hasOutcome reports whether a reload answer read so far contains a complete
// "Success=N" line.
func hasOutcome(answer []byte) bool {
	i := bytes.Index(answer, []byte("Success="))
	return i >= 0 && bytes.IndexByte(answer[i:], '\n') >= 0
}

// parseReloadAnswer reads the answer of HAProxy 2.7+ to "reload":
// "Success=1" or "Success=0", then optionally a "--" line and the startup
// logs, which are returned as output.
func parseReloadAnswer(answer string) (reloadOutcome, string) {
	outcome := outcomeUnknown
	lines := strings.Split(answer, "\n")
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "Success="); ok && outcome == outcomeUnknown {
			if v == "1" {
				outcome = outcomeSucceeded
			} else {
				outcome = outcomeFailed
			}
			rest := lines[i+1:]
			for j, l := range rest {
				if strings.TrimSpace(l) == "--" {
					rest = rest[j+1:]
					break
				}
			}
			return outcome, strings.TrimSpace(strings.Join(rest, "\n"))
		}
	}
	return outcome, ""
}

// summarizeOutput turns startup logs into one line for an error message:
// the alert lines if there are any, else all non-empty lines, shortened.
// The level and PID prefix ("[ALERT]    (1234) : ") and HAProxy's closing
// lines that only say that there were errors are left out.
func summarizeOutput(out string) string {
	var all, alerts []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		m := logPrefix.FindStringSubmatch(l)
		if m != nil {
			l = strings.TrimPrefix(l[len(m[0]):], "config : ")
			if l == "" || isClosingLine(l) {
				continue
			}
		}
		all = append(all, l)
		if m != nil && m[1] == "ALERT" {
			alerts = append(alerts, l)
		}
	}
	lines := all
	if len(alerts) > 0 {
		lines = alerts
	}
	const maxLines = 5
	if len(lines) > maxLines {
		lines = append(lines[:maxLines:maxLines], fmt.Sprintf("(%d more lines)", len(lines)-maxLines))
	}
	return strings.Join(lines, "; ")
}

// logPrefix matches the start of an HAProxy startup log line:
// "[ALERT]    (1234) : ", with the level as the first group.
var logPrefix = regexp.MustCompile(`^\[([A-Z]+)\]\s*(?:\(\d+\)\s*)?(?::\s*)?`)

// isClosingLine reports whether a startup log line (without its prefix)
// only concludes that there were errors, e.g. "Fatal errors found in
// configuration." (it would also show the binary's path).
func isClosingLine(l string) bool {
	return strings.HasPrefix(l, "Fatal errors found in configuration") ||
		strings.HasPrefix(l, "Error(s) found in configuration file") ||
		strings.HasPrefix(l, "Loading failure") ||
		strings.HasSuffix(l, ".main()] Some protocols failed to start their listeners! Exiting.")
}
