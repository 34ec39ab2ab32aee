package master

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Process is one line of `show proc`.
type Process struct {
	// PID is the process id.
	PID int
	// Type is "master", "worker" or "program".
	Type string
	// Reloads is the reloads column: for the master the number of reloads
	// since it started, for a worker the number of reloads it has survived.
	Reloads int
	// Uptime is HAProxy's uptime text, e.g. "0d00h10m06s"; empty if absent.
	Uptime string
	// Version is the HAProxy version the process runs; empty if absent.
	Version string
}

// Status is a parsed `show proc`.
type Status struct {
	// Master is the master process.
	Master Process
	// FailedReloads is the master's "[failed: N]": the number of failed
	// reloads since the last successful one. It is 0 when not printed.
	FailedReloads int
	// Workers are the current workers.
	Workers []Process
	// OldWorkers are workers of previous generations still running, e.g.
	// finishing connections they accepted before a reload.
	OldWorkers []Process
}

// WorkerPIDs returns the PIDs of the current workers, in listed order.
func (s *Status) WorkerPIDs() []int {
	pids := make([]int, 0, len(s.Workers))
	for _, w := range s.Workers {
		pids = append(pids, w.PID)
	}
	return pids
}

// section is the part of `show proc` a line belongs to.
type section int

const (
	sectionTop section = iota // before any "# ..." section line: the master
	sectionWorkers
	sectionOldWorkers
	sectionOther // "# programs" and sections this package does not know
)

// ParseShowProc parses the output of the master CLI's `show proc`. It is
// tolerant of the differences between HAProxy versions (see the package
// documentation) and returns an error when the output has no master line or
// a process line it cannot read.
func ParseShowProc(out string) (*Status, error) {
	st := &Status{}
	sec := sectionTop
	reloadsCol := 2 // "<PID> <type> <reloads> <uptime> <version>" unless the header says otherwise
	haveMaster := false
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			switch name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(line, "#"))); {
			case strings.HasPrefix(name, "<"):
				if col := headerColumn(line, "<reloads>"); col >= 0 {
					reloadsCol = col
				}
			case name == "workers":
				sec = sectionWorkers
			case name == "old workers":
				sec = sectionOldWorkers
			default:
				sec = sectionOther
			}
			continue
		}
		if sec == sectionOther {
			continue
		}
		p, failed, err := parseProcLine(line, reloadsCol)
		if err != nil {
			return nil, fmt.Errorf("show proc line %d %q: %w", i+1, line, err)
		}
		switch {
		case sec == sectionTop && p.Type == "master":
			if haveMaster {
				return nil, fmt.Errorf("show proc line %d %q: a second master line", i+1, line)
			}
			haveMaster = true
			st.Master = p
			st.FailedReloads = failed
		case sec == sectionOldWorkers:
			st.OldWorkers = append(st.OldWorkers, p)
		default:
			// Workers, or a non-master line before "# workers" as printed
			// by versions without section headers.
			st.Workers = append(st.Workers, p)
		}
	}
	if !haveMaster {
		return nil, errors.New("show proc: no master line in the answer " + quoteShort(out))
	}
	return st, nil
}

// headerColumn returns the index of the column named name ("<reloads>") in a
// `show proc` header such as "#<PID>  <type>  <relative PID>  <reloads>", or
// -1 if it is not there.
func headerColumn(header, name string) int {
	col := 0
	rest := header
	for {
		start := strings.IndexByte(rest, '<')
		if start < 0 {
			return -1
		}
		end := strings.IndexByte(rest[start:], '>')
		if end < 0 {
			return -1
		}
		if rest[start:start+end+1] == name {
			return col
		}
		col++
		rest = rest[start+end+1:]
	}
}

// parseProcLine reads one process line. It splits on whitespace, keeps a
// bracketed group ("[was: 1]") as one token, and removes the master's
// "[failed: N]" annotation, returning N.
func parseProcLine(line string, reloadsCol int) (Process, int, error) {
	var fields []string
	failed := 0
	for _, tok := range tokenize(line) {
		if inner, ok := strings.CutPrefix(tok, "[failed:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(inner, "]")))
			if err != nil {
				return Process{}, 0, fmt.Errorf("bad failed count %q", tok)
			}
			failed = n
			continue
		}
		fields = append(fields, tok)
	}
	if len(fields) < 2 {
		return Process{}, 0, errors.New("expected at least a PID and a type")
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return Process{}, 0, fmt.Errorf("bad PID %q", fields[0])
	}
	p := Process{PID: pid, Type: fields[1]}
	if reloadsCol < len(fields) {
		p.Reloads, err = strconv.Atoi(fields[reloadsCol])
		if err != nil {
			return Process{}, 0, fmt.Errorf("bad reloads count %q", fields[reloadsCol])
		}
	} else if p.Type == "master" {
		return Process{}, 0, errors.New("no reloads column")
	}
	if reloadsCol+1 < len(fields) {
		p.Uptime = fields[reloadsCol+1]
	}
	if reloadsCol+2 < len(fields) {
		p.Version = fields[reloadsCol+2]
	}
	return p, failed, nil
}

// tokenize splits s on whitespace, except inside square brackets.
func tokenize(s string) []string {
	var toks []string
	var cur strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case (r == ' ' || r == '\t') && depth == 0:
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	}
	return toks
}

// quoteShort quotes s for an error message, cut to a readable length.
func quoteShort(s string) string {
	const limit = 200
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}
