package attacks

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Window lengths: any run of this many consecutive characters of a planted
// value (or of one of its encodings) found in an output is a leak. The token
// and the env value are random, so 12 characters cannot match by chance; PEM
// body lines are base64 of keys and certificates, 16 characters.
const (
	tokenWindow = 12
	pemWindow   = 16
)

// leakScanner finds planted secrets and process details in outputs.
type leakScanner struct {
	// windows maps each window of each planted value to what it is.
	windows map[int]map[string]string
	host    *regexp.Regexp
	// details are patterns of process details: temporary paths, PIDs,
	// HAProxy message prefixes, timestamps.
	details []detail
}

type detail struct {
	what string
	re   *regexp.Regexp
}

// newLeakScanner builds the scanner of this run's planted values.
func newLeakScanner(p planted) *leakScanner {
	s := &leakScanner{windows: map[int]map[string]string{}}
	s.addValue("the planted Secret token", p.token, tokenWindow)
	s.addValue("the planted environment value", p.envValue, tokenWindow)
	s.addPEM("the planted TLS key", p.tlsKey)
	s.addPEM("the planted TLS certificate", p.tlsCert)
	if h := strings.TrimSpace(p.hostname); h != "" {
		// The host name can be short ("vm"): match it as a word only.
		s.host = regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_.-])` + regexp.QuoteMeta(h) + `($|[^A-Za-z0-9_-])`)
	}
	tmp := strings.TrimRight(os.TempDir(), "/")
	s.details = []detail{
		{"a temporary path of an htc process", regexp.MustCompile(regexp.QuoteMeta(env.tmp))},
		{"one of htc's temporary directories", regexp.MustCompile(`htc-(check|controller|proposal|test|bundle)-[0-9]+`)},
		{"a temporary path", regexp.MustCompile(regexp.QuoteMeta(tmp) + `/htc-`)},
		{"an HAProxy message prefix", regexp.MustCompile(`\[(ALERT|WARNING|NOTICE|DIAG)\]`)},
		{"a PID", regexp.MustCompile(`\(\d{1,7}\)\s*:`)},
		{"a PID", regexp.MustCompile(`(?i)\bpid[ =:]+\d+`)},
		{"a timestamp", regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}`)},
		{"a timestamp", regexp.MustCompile(`\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}`)},
		{"a timestamp", regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}\b`)},
	}
	return s
}

// addValue registers the windows of a secret value and of its encodings:
// base64 at the three byte alignments (so that the encoding of any slice of
// it shares windows with one of them), URL-safe base64, hex and the value
// reversed.
func (s *leakScanner) addValue(what, v string, w int) {
	forms := map[string]string{"": v, " (reversed)": reverse(v), " (hex)": hex.EncodeToString([]byte(v))}
	for i := 0; i < 3 && i < len(v); i++ {
		forms[fmt.Sprintf(" (base64, offset %d)", i)] = trimPad(base64.StdEncoding.EncodeToString([]byte(v[i:])))
		forms[fmt.Sprintf(" (base64url, offset %d)", i)] = trimPad(base64.URLEncoding.EncodeToString([]byte(v[i:])))
	}
	for suffix, f := range forms {
		s.addWindows(what+suffix, f, w)
	}
}

// addPEM registers each body line of a PEM block (the header lines are
// public), and the PEM's base64 (what the Secret's data holds).
func (s *leakScanner) addPEM(what string, p []byte) {
	for _, line := range strings.Split(string(p), "\n") {
		if line == "" || strings.HasPrefix(line, "-----") {
			continue
		}
		s.addWindows(what+" (a PEM line)", line, pemWindow)
	}
	s.addValue(what+" (Secret data)", string(p), pemWindow)
}

func (s *leakScanner) addWindows(what, v string, w int) {
	if s.windows[w] == nil {
		s.windows[w] = map[string]string{}
	}
	if len(v) < w {
		s.windows[w][v] = what
		return
	}
	for i := 0; i+w <= len(v); i++ {
		s.windows[w][v[i:i+w]] = what
	}
}

func trimPad(s string) string { return strings.TrimRight(s, "=") }

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// scanOpts says what else a scan looks for, or leaves out.
type scanOpts struct {
	// extra are the case's own mustNotLeak strings (whole).
	extra []string
	// noDetails leaves out process details (for whole controller logs, whose
	// lines carry a legitimate time field and start-up paths).
	noDetails bool
}

// scan returns one finding per leak in text (an output named label).
func (s *leakScanner) scan(label, text string, o scanOpts) []string {
	var out []string
	seen := map[string]bool{}
	report := func(what, sample string) {
		if seen[what] {
			return
		}
		seen[what] = true
		out = append(out, fmt.Sprintf("%s leaks %s: %q", label, what, excerpt(text, sample)))
	}
	for w, set := range s.windows {
		for i := 0; i+w <= len(text); i++ {
			if what, ok := set[text[i:i+w]]; ok {
				report(what, text[i:i+w])
			}
		}
	}
	for _, x := range o.extra {
		if x != "" && strings.Contains(text, x) {
			report("the case's mustNotLeak value", x)
		}
	}
	if s.host != nil {
		if m := s.host.FindString(text); m != "" {
			report("the host name", m)
		}
	}
	if !o.noDetails {
		for _, d := range s.details {
			if m := d.re.FindString(text); m != "" {
				report(d.what, m)
			}
		}
	}
	return out
}

// excerpt shows where sample occurs in text, shortened.
func excerpt(text, sample string) string {
	i := strings.Index(text, sample)
	if i < 0 {
		return sample
	}
	from, to := max(0, i-40), min(len(text), i+len(sample)+40)
	return text[from:to]
}

// scanLogLines scans slog JSON lines, leaving out each line's time field
// (the one timestamp a log line legitimately has).
func (s *leakScanner) scanLogLines(label, lines string, o scanOpts) []string {
	var out []string
	for _, line := range strings.Split(lines, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err == nil {
			delete(m, "time")
			b, _ := json.Marshal(m)
			line = string(b)
		}
		out = append(out, s.scan(label, line, o)...)
	}
	return out
}

// TestLeakScannerFindsPlantedValues proves the scanner finds what it must
// (so that "no leak" means something) and passes clean text.
func TestLeakScannerFindsPlantedValues(t *testing.T) {
	p := env.planted
	keyLines := strings.Split(strings.TrimSpace(string(p.tlsKey)), "\n")
	mustFind := map[string]string{
		"raw token":            "denied: " + p.token,
		"token slice":          "x" + p.token[5:19] + "y",
		"base64 token":         base64.StdEncoding.EncodeToString([]byte(p.token)),
		"base64 of a slice":    base64.StdEncoding.EncodeToString([]byte(p.token[7:30])),
		"hex token":            hex.EncodeToString([]byte(p.token)),
		"env value":            "address '" + p.envValue + "'",
		"PEM line":             "bad: " + keyLines[1],
		"PEM line, %q":         fmt.Sprintf("%q", string(p.tlsKey)),
		"Secret data (base64)": base64.StdEncoding.EncodeToString(p.tlsKey),
		"temp path":            "file " + env.tmp + "/x/haproxy.cfg",
		"htc temp dir":         "/somewhere/htc-check-12345/maps/a.map",
		"HAProxy prefix":       "[ALERT]    (1234) : config : parsing",
		"RFC3339":              "at 2025-01-02T03:04:05Z",
		"clock":                "at 03:04:05 it failed",
	}
	for name, text := range mustFind {
		if len(env.scan.scan(name, text, scanOpts{})) == 0 {
			t.Errorf("the scanner missed %s in %q", name, text)
		}
	}
	if h := p.hostname; h != "" {
		if len(env.scan.scan("host", "could not resolve address '"+h+"'", scanOpts{})) == 0 {
			t.Errorf("the scanner missed the host name %q", h)
		}
	}
	clean := []string{
		"haproxy.cfg:29: 'server default_echo_http/echo' : could not resolve address 'does-not-exist.invalid'",
		"Service 'api' not found",
		"2/14 validation tests failed: basic-routing: pattern 'backend default_echo_http\\n' not found in haproxy.cfg",
	}
	for _, text := range clean {
		if f := env.scan.scan("clean", text, scanOpts{}); len(f) > 0 {
			t.Errorf("false positive on %q: %v", text, f)
		}
	}
	if f := env.scan.scanLogLines("log", `{"time":"2025-01-02T03:04:05Z","level":"INFO","msg":"admission","allowed":true}`, scanOpts{}); len(f) > 0 {
		t.Errorf("a log line's own time field was reported: %v", f)
	}
}
