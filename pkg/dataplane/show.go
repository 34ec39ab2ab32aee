package dataplane

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The readers of HAProxy 3.0's answers to the show commands, in one file
// (TestAnswersOfHAProxy30 runs each on the real binary).

// Commander sends one runtime API command (with an optional payload) to
// the worker that runs the configuration and returns its answer; an answer
// HAProxy gives as an error is an error (master.WorkerSession).
type Commander interface {
	Do(ctx context.Context, cmd, payload string) (string, error)
}

// serverState is what `show servers state` says of one server.
type serverState struct {
	addr  string
	port  int
	admin int // srv_admin_state: SRV_ADMF_* bits
	// uweight is the weight set by the configuration or the runtime API.
	uweight int
	// checkState and agentState: CHK_ST_* bits of the health and agent
	// checks.
	checkState, agentState int
}

// SRV_ADMF_FMAINT (include/haproxy/server-t.h): the server was put in
// maintenance by the configuration ("disabled") or the runtime API.
const adminForcedMaint = 0x01

// CHK_ST_CONFIGURED and CHK_ST_ENABLED (include/haproxy/check-t.h).
const (
	checkConfigured = 0x02
	checkEnabled    = 0x04
)

// parseServersState reads `show servers state` (format 1): a version line,
// a "# " line naming the columns, one line per server. The columns are
// found by name. The result is keyed by backend name, then server name.
func parseServersState(answer string) (map[string]map[string]serverState, error) {
	out := map[string]map[string]serverState{}
	var col map[string]int
	need := []string{"be_name", "srv_name", "srv_addr", "srv_admin_state", "srv_uweight", "srv_port", "srv_check_state", "srv_agent_state"}
	for line := range strings.Lines(answer) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" || line == "1":
			continue
		case strings.HasPrefix(line, "# "):
			col = map[string]int{}
			for i, name := range strings.Fields(line[2:]) {
				col[name] = i
			}
			for _, n := range need {
				if _, ok := col[n]; !ok {
					return nil, fmt.Errorf("show servers state: no column %s in %q", n, line)
				}
			}
			continue
		case col == nil:
			return nil, fmt.Errorf("show servers state: a line before the column names: %q", line)
		}
		f := strings.Fields(line)
		get := func(name string) string {
			if i := col[name]; i < len(f) {
				return f[i]
			}
			return ""
		}
		num := func(name string) (int, error) {
			v, err := strconv.Atoi(get(name))
			if err != nil {
				return 0, fmt.Errorf("show servers state: column %s of %q: %w", name, line, err)
			}
			return v, nil
		}
		var st serverState
		var err error
		st.addr = get("srv_addr")
		for _, c := range []struct {
			name string
			to   *int
		}{{"srv_port", &st.port}, {"srv_admin_state", &st.admin}, {"srv_uweight", &st.uweight}, {"srv_check_state", &st.checkState}, {"srv_agent_state", &st.agentState}} {
			if *c.to, err = num(c.name); err != nil {
				return nil, err
			}
		}
		be := get("be_name")
		if out[be] == nil {
			out[be] = map[string]serverState{}
		}
		out[be][get("srv_name")] = st
	}
	return out, nil
}

// parseRefNames reads the list `show map` or `show acl` print without an
// argument: a "# id (file) description" line, then "<id> (<name>) ..."
// per pattern reference. It returns the names.
func parseRefNames(answer string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.Lines(answer) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		_, rest, ok := strings.Cut(line, " (")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, ") "); ok {
			out[name] = true
		}
	}
	return out
}

// parseMapEntries reads `show map <name>`: "<pointer> <key> <value>" per
// entry, in the reference's order.
func parseMapEntries(answer string) (keys, values []string, err error) {
	for line := range strings.Lines(answer) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		ptr, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(ptr, "0x") {
			return nil, nil, fmt.Errorf("show map: unexpected line %q", line)
		}
		k, v, _ := strings.Cut(rest, " ")
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}

// parseCertNames reads `show ssl cert` (or `show ssl ca-file`, whose lines
// add " - N certificate(s)"): a "# filename" line, then a name per line;
// names of uncommitted transactions start with '*'.
func parseCertNames(answer string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.Lines(answer) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " - ")
		out[strings.TrimPrefix(name, "*")] = true
	}
	return out
}

// parseFingerprints returns the "SHA1 FingerPrint:" values of `show ssl
// cert <name>` or `show ssl ca-file <name>`, upper-case hex, in order.
func parseFingerprints(answer string) []string {
	var out []string
	for line := range strings.Lines(answer) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SHA1 FingerPrint:"); ok {
			out = append(out, strings.ToUpper(strings.TrimSpace(v)))
		}
	}
	return out
}

// parseVersion reads the answer to `prepare map`: "New version created: N".
func parseVersion(answer string) (string, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(answer), "New version created: ")
	if !ok {
		return "", fmt.Errorf("unexpected answer %q", answer)
	}
	if _, err := strconv.ParseUint(v, 10, 32); err != nil {
		return "", fmt.Errorf("unexpected version %q", v)
	}
	return v, nil
}

// committed reports whether the answer to `commit ssl cert` or `commit ssl
// ca-file` says the commit succeeded ("Committing <name>." then
// "Success!"; "Failed!" after the reasons when it did not,
// src/ssl_ckch.c).
func committed(answer string) bool {
	return strings.HasSuffix(strings.TrimSpace(answer), "Success!")
}
