package funcs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regexCases are regexCompiles' table: the RE2 syntax HAProxy's PCRE2
// compiles too (true), and what it refuses (false): invalid in both, and
// PCRE-only or beyond RE2's limits.
var regexCases = []struct {
	re   string
	want bool
}{
	{`/v[0-9]+/.*`, true},
	{`\d+`, true},
	{`v[0-9]+`, true},
	{`(?i)/API/(v1|v2)`, true},
	{`^/a$`, true},
	{`[[:alpha:]]+\s*\w\b`, true},
	{`(?P<version>v[0-9]+)`, true},
	{`a{2,5}b{3}c{1000}`, true},
	{`x*?y+?z??`, true},
	{`\Q\x{100}(\E`, true},
	{`\x{41}\x7e\t\n`, true},
	{`\\x{100}`, true},
	{`\pL\p{Greek}\PN`, true},
	{`(?s).(?m)^$`, true},
	{`café|naïve`, true},
	{`[^/]+\.(png|jpe?g)`, true},
	{`%[src]\$HOME"quoted"`, true},
	{``, true},

	{`a(`, false},
	{`/v[0-9+`, false},
	{`a)|(b`, false},
	{`*a`, false},
	{`a**`, false},
	{`[z-a]`, false},
	{`\8`, false},
	{`(a)\1`, false},
	{`a(?=b)`, false},
	{`a(?!b)`, false},
	{`(?<=a)b`, false},
	{`(?<!a)b`, false},
	{`a++`, false},
	{`(?>a+)`, false},
	{`(a|(?R))`, false},
	{`a\Kb`, false},
	{`(?(1)a|b)`, false},
	{`a{1001}`, false},
	{`\x{100}`, false},
	{`[\x{41}-\x{3b1}]`, false},
	{`\C`, false},
}

func TestRegexCompilesAcceptsRE2AndRefusesTheRest(t *testing.T) {
	for _, tc := range regexCases {
		assert.Equal(t, tc.want, regexCompilesFunc(tc.re), "%q", tc.re)
	}
}

// TestRegexCompilesAgreesWithHAProxy30 is the oracle: every regex of the
// table regexCompiles accepts compiles in the real HAProxy 3.0 as the
// Gateway library writes it (an ACL -m reg of "^(?:RE)$" through
// quoteValue), and the ones it refuses for being invalid in both are
// refused by HAProxy too (so the configuration tests something). HAProxy
// compiles `a)|(b` as the library writes it (^(?:a)|(b)$, unanchored):
// regexCompiles judges the value alone, and refuses it.
func TestRegexCompilesAgreesWithHAProxy30(t *testing.T) {
	bin := os.Getenv("HTC_HAPROXY30")
	if bin == "" && testing.Short() {
		t.Skip("HTC_HAPROXY30 is not set (path of an haproxy 3.0 binary or wrapper)")
	}
	if bin == "" {
		t.Fatal("HTC_HAPROXY30 is not set: run `make haproxy` and set HTC_HAPROXY30=$PWD/bin/image-haproxy/haproxy (or run with -short to skip)")
	}
	check := func(re string) error {
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`).Replace(fmt.Sprintf("^(?:%s)$", re)) + `"` // as quoteValue
		cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
		require.NoError(t, os.WriteFile(cfg, []byte("defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n"+
			"frontend f\n  bind 127.0.0.1:8080\n  acl r path -m reg "+q+"\n  http-request deny if r\n"), 0o644))
		out, err := exec.CommandContext(t.Context(), bin, "-c", "-f", cfg).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	for _, tc := range regexCases {
		if tc.want {
			assert.NoError(t, check(tc.re), "%q: regexCompiles accepts it", tc.re)
		}
	}
	for _, re := range []string{`a(`, `/v[0-9+`, `*a`, `[z-a]`, `\x{100}`} {
		assert.Error(t, check(re), "%q is refused by HAProxy as well", re)
	}
}
