package dataplane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// Failure is a runtime command that failed: HAProxy may run part of the
// plan. The caller reloads.
type Failure struct {
	// Kind is what the command changed: KindServer, KindMap, KindCert,
	// or "show" for the questions Apply asks first.
	Kind string
	// Command is the command line (without its payload).
	Command string
	// Err is HAProxy's refusal (*master.CommandError) or what broke the
	// exchange.
	Err error
}

// Error names the command and the reason.
func (f *Failure) Error() string {
	return fmt.Sprintf("runtime command %q failed: %v", f.Command, f.Err)
}

// Unwrap returns Err.
func (f *Failure) Unwrap() error { return f.Err }

// The kinds of Applied: the label values of the runtime applies the
// controller counts.
const (
	KindServer = "server"
	KindMap    = "map"
	KindCert   = "cert"
	KindCAFile = "ca-file"
)

// Applied counts what a plan changed, by kind.
type Applied map[string]int

// payloadBytes bounds the payload of one add map command, so that a map is
// sent in a few commands of moderate size.
const payloadBytes = 8 << 10

// defaultBufsize is HAProxy's tune.bufsize when the configuration does not
// set it: the CLI reads a command with its payload into one buffer of that
// size and refuses (or, for a line longer than the buffer, never answers)
// a larger one.
const defaultBufsize = 16384

// cliBufsize is the tune.bufsize the configuration sets (the last one, as
// HAProxy reads them), defaultBufsize when none, 0 when one is not a
// number this package reads (a variable): then no payload is sent (a
// payload larger than the buffer is not refused cleanly by HAProxy: the
// CLI reads the rest of it as another command,
// TestApplyStopsAtTheFirstCommandHAProxyRefuses).
func cliBufsize(cfg string) int {
	size := defaultBufsize
	if !strings.Contains(cfg, "tune.bufsize") {
		return size
	}
	for _, line := range policy.Lines(cfg) {
		kw, words := firstWord(line)
		if kw != "tune.bufsize" {
			continue
		}
		if words == nil {
			words = policy.Words(line)
		}
		size = 0
		if len(words) > 1 {
			if n, err := strconv.Atoi(words[1]); err == nil && n > 0 {
				size = n
			}
		}
	}
	return size
}

// fits reports whether a command line cmd with a payload of n bytes fits
// in HAProxy's CLI buffer of bufsize bytes, leaving the 1024 bytes HAProxy
// keeps free in a buffer (tune.maxrewrite).
func fits(cmd string, n, bufsize int) bool { return len(cmd)+n+1024 <= bufsize }

// Apply makes the changes of p through c. First, when files changed, it
// asks HAProxy what each one is (show map, show acl, show ssl cert, show
// ssl ca-file) and returns a *Reason, before sending any change, for a
// file that is none of a map, a certificate or a CA file, or whose content
// cannot be sent as HAProxy reads the file. Then it sends, in this order:
// servers added, replaced and updated; certificates; CA files; maps (each
// changed by one command when mapDelta allows it, else replaced whole and
// at once: prepare map, add map @version, commit map); servers removed. A
// command that fails ends it with a *Failure: HAProxy may run part of the
// plan, and the caller must reload. It returns what it applied.
func (p *Plan) Apply(ctx context.Context, c Commander) (Applied, error) {
	done := Applied{}
	files, err := p.resolveFiles(ctx, c)
	if err != nil {
		return done, kindOf(err, "show")
	}
	for _, sc := range p.Servers {
		if sc.Op == OpRemove {
			continue
		}
		if err := sc.apply(ctx, c); err != nil {
			return done, kindOf(err, KindServer)
		}
		done[KindServer]++
	}
	for _, f := range files {
		if err := f.apply(ctx, c); err != nil {
			return done, kindOf(err, f.kind)
		}
		done[f.kind]++
	}
	for _, sc := range p.Servers {
		if sc.Op != OpRemove {
			continue
		}
		if err := sc.apply(ctx, c); err != nil {
			return done, kindOf(err, KindServer)
		}
		done[KindServer]++
	}
	return done, nil
}

// kindOf sets the Kind of a *Failure err.
func kindOf(err error, kind string) error {
	if f, ok := err.(*Failure); ok {
		f.Kind = kind
	}
	return err
}

// do sends one command; an error is a *Failure.
func do(ctx context.Context, c Commander, cmd, payload string) (string, error) {
	answer, err := c.Do(ctx, cmd, payload)
	if err != nil {
		return "", &Failure{Command: cmd, Err: err}
	}
	return answer, nil
}

// apply sends the commands of one server change.
func (sc ServerChange) apply(ctx context.Context, c Commander) error {
	id := cliWord(sc.Backend) + "/" + cliWord(sc.Server)
	remove := func() error {
		if _, err := do(ctx, c, "set server "+id+" state maint", ""); err != nil {
			return err
		}
		return delServer(ctx, c, id, drainWait)
	}
	switch sc.Op {
	case OpRemove:
		return remove()
	case OpReplace:
		if err := remove(); err != nil {
			return err
		}
		fallthrough
	case OpAdd:
		return addServer(ctx, c, id, sc.new)
	case OpUpdate:
		o, n := sc.old, sc.new
		if o.ip != n.ip || o.port != n.port {
			if _, err := do(ctx, c, fmt.Sprintf("set server %s addr %s port %d", id, n.ip, n.port), ""); err != nil {
				return err
			}
		}
		if o.weight != n.weight {
			if _, err := do(ctx, c, fmt.Sprintf("set server %s weight %d", id, n.weight), ""); err != nil {
				return err
			}
		}
		if o.disabled != n.disabled {
			_, err := do(ctx, c, "set server "+id+" state "+stateWord(n.disabled), "")
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown server operation %q", sc.Op)
}

// drainWait bounds how long removing a server waits for the streams it
// still serves. In maintenance it takes no new one, and HAProxy 3.0
// refuses "del server" while one it has is open (its answer: the server
// "still has connections attached to it"; 3.1's "wait srv-removable" is
// not in 3.0): a request under way as the server goes ends normally,
// then the server goes. Past drainWait the removal fails and the caller
// reloads, as for any failure: the old worker finishes those streams.
const drainWait = time.Second

// delServer deletes server id, in maintenance. While HAProxy refuses
// because the server still has connections, it asks again after 5 ms,
// then twice as long each time (at most 100 ms) until wait has passed or
// ctx ends; any other answer is returned at once.
func delServer(ctx context.Context, c Commander, id string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		_, err := do(ctx, c, "del server "+id, "")
		if err == nil || !stillConnected(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// stillConnected reports whether err is HAProxy refusing to delete a
// server that still has connections attached to it.
func stillConnected(err error) bool {
	ce, ok := errors.AsType[*master.CommandError](err)
	return ok && strings.Contains(ce.Answer, "still has connections attached")
}

// addServer adds s (add server starts it in maintenance, its checks off),
// enables its checks and makes it ready unless it is disabled.
func addServer(ctx context.Context, c Commander, id string, s *server) error {
	words := []string{"add server", id, cliWord(s.addr)}
	if s.weight != 1 {
		words = append(words, "weight", strconv.Itoa(s.weight))
	}
	for _, o := range s.options {
		words = append(words, cliWord(o))
	}
	if _, err := do(ctx, c, strings.Join(words, " "), ""); err != nil {
		return err
	}
	if s.check {
		if _, err := do(ctx, c, "enable health "+id, ""); err != nil {
			return err
		}
	}
	if s.agent {
		if _, err := do(ctx, c, "enable agent "+id, ""); err != nil {
			return err
		}
	}
	if !s.disabled {
		if _, err := do(ctx, c, "set server "+id+" state ready", ""); err != nil {
			return err
		}
	}
	return nil
}

func stateWord(disabled bool) string {
	if disabled {
		return "maint"
	}
	return "ready"
}

// fileUpdate is a changed file and how HAProxy uses it.
type fileUpdate struct {
	FileChange
	kind string // KindMap or KindCert
	// payloads are the payloads to send: the map's entries in chunks, or
	// the PEM text; the payload of edit.
	payloads []string
	// edit, when not empty, is the one command that changes the map
	// (mapDelta), instead of replacing it whole.
	edit string
}

// resolveFiles asks HAProxy what each changed file is and prepares its
// payloads; a *Reason when one cannot be applied.
func (p *Plan) resolveFiles(ctx context.Context, c Commander) ([]fileUpdate, error) {
	if len(p.Files) == 0 {
		return nil, nil
	}
	uses := map[string]map[string]bool{}
	for _, q := range []struct{ kind, cmd string }{
		{KindMap, "show map"}, {"acl", "show acl"}, {KindCert, "show ssl cert"}, {KindCAFile, "show ssl ca-file"},
	} {
		answer, err := do(ctx, c, q.cmd, "")
		if err != nil {
			return nil, err
		}
		if q.kind == KindMap || q.kind == "acl" {
			uses[q.kind] = parseRefNames(answer)
		} else {
			uses[q.kind] = parseCertNames(answer)
		}
	}
	var out []fileUpdate
	for _, f := range p.Files {
		name := fmt.Sprintf("%s %s", f.Kind, policy.Shorten(f.Name))
		var as []string
		for _, k := range []string{KindMap, "acl", KindCert, KindCAFile} {
			if uses[k][f.Path] {
				as = append(as, k)
			}
		}
		u := fileUpdate{FileChange: f}
		switch {
		case len(as) == 0:
			return nil, &Reason{Kind: ReasonFiles, Detail: name + " is not a map, certificate or CA file HAProxy reports (HAProxy reads it when it loads the configuration)"}
		case len(as) > 1:
			return nil, &Reason{Kind: ReasonFiles, Detail: name + " is used as " + strings.Join(as, " and ")}
		case as[0] == "acl":
			return nil, &Reason{Kind: ReasonFiles, Detail: name + " is an ACL pattern file (not applied at run time)"}
		case as[0] == KindCAFile:
			// HAProxy 3.0 commits a CA file, but a certificate committed
			// after it is then not served (TestHAProxy30CAFileCommitStopsLaterCertCommits).
			return nil, &Reason{Kind: ReasonFiles, Detail: name + " is a CA file (HAProxy 3.0 serves no certificate committed after a CA file was)"}
		case as[0] == KindMap:
			if e, ok := mapDelta(f.old, f.Content, f.order); ok {
				if cmd, pl := e.command(f.Path); fits(cmd, len(pl), p.bufsize) {
					u.kind, u.edit, u.payloads = KindMap, cmd, []string{pl}
					break
				}
			}
			payloads, why := mapPayloads(f.Content, "add map @4294967295 "+cliWord(f.Path), p.bufsize)
			if why != "" {
				return nil, &Reason{Kind: ReasonFiles, Detail: name + ": " + why}
			}
			u.kind, u.payloads = KindMap, payloads
		default:
			pem, why := pemPayload(f.Content)
			if why == "" && !fits("set ssl cert "+cliWord(f.Path), len(pem), p.bufsize) {
				why = fmt.Sprintf("%d bytes do not fit HAProxy's CLI buffer of %d bytes (tune.bufsize)", len(pem), p.bufsize)
			}
			if why != "" {
				return nil, &Reason{Kind: ReasonFiles, Detail: name + ": " + why}
			}
			u.kind, u.payloads = as[0], []string{pem}
		}
		if f.Kind == bundle.KindCert && u.kind == KindMap {
			return nil, &Reason{Kind: ReasonFiles, Detail: name + " is a certificate of the bundle used as a map"}
		}
		out = append(out, u)
	}
	return out, nil
}

// apply sends the commands of one file update.
func (u fileUpdate) apply(ctx context.Context, c Commander) error {
	path := cliWord(u.Path)
	switch u.kind {
	case KindMap:
		if u.edit != "" {
			_, err := do(ctx, c, u.edit, u.payloads[0])
			return err
		}
		answer, err := do(ctx, c, "prepare map "+path, "")
		if err != nil {
			return err
		}
		ver, err := parseVersion(answer)
		if err != nil {
			return &Failure{Command: "prepare map " + path, Err: err}
		}
		for _, pl := range u.payloads {
			if _, err := do(ctx, c, "add map @"+ver+" "+path, pl); err != nil {
				return err
			}
		}
		_, err = do(ctx, c, "commit map @"+ver+" "+path, "")
		return err
	case KindCert:
		if _, err := do(ctx, c, "set ssl cert "+path, u.payloads[0]); err != nil {
			return err
		}
		cmd := "commit ssl cert " + path
		answer, err := do(ctx, c, cmd, "")
		if err != nil {
			return err
		}
		if !committed(answer) {
			return &Failure{Command: cmd, Err: errors.New(policy.Shorten(strings.TrimSpace(answer)))}
		}
		return nil
	}
	return fmt.Errorf("unknown file kind %q", u.kind)
}

// mapPayloads turns a map file into the payloads of add map: "key value"
// per entry HAProxy reads from the file (policy.MapEntries), in order, cut
// into payloads of at most payloadBytes (or half the CLI buffer), each of
// which with the command line cmd fits HAProxy's CLI buffer of bufsize
// bytes. The CLI reads a payload line's key up to the first blank and its
// value to the end of the line, which gives the file's entries back. An
// entry without a value (a payload cannot carry it) or too long for the
// buffer cannot be sent (why says so).
func mapPayloads(content, cmd string, bufsize int) (payloads []string, why string) {
	keys, values := policy.MapEntries(content)
	limit := min(payloadBytes, bufsize/2)
	var b strings.Builder
	for i, k := range keys {
		if values[i] == "" {
			return nil, "the entry " + policy.Shorten(k) + " has no value, which add map cannot carry"
		}
		line := k + " " + values[i] + "\n"
		if !fits(cmd, len(line), bufsize) {
			return nil, fmt.Sprintf("an entry of %d bytes does not fit HAProxy's CLI buffer of %d bytes (tune.bufsize)", len(line), bufsize)
		}
		if b.Len() > 0 && (b.Len()+len(line) > limit || !fits(cmd, b.Len()+len(line), bufsize)) {
			payloads = append(payloads, b.String())
			b.Reset()
		}
		b.WriteString(line)
	}
	if b.Len() > 0 {
		payloads = append(payloads, b.String())
	}
	return payloads, ""
}

// pemPayload is a certificate or CA file's content without its blank lines
// (an empty line ends a payload; the PEM reader skips blank lines between
// blocks); a carriage return or a NUL byte is refused (why).
func pemPayload(content string) (string, string) {
	if strings.ContainsAny(content, "\r\x00") {
		return "", "a carriage return or NUL byte in the file"
	}
	var b strings.Builder
	for line := range strings.Lines(content) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "", "the file is empty"
	}
	return b.String(), ""
}
