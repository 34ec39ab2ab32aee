package haproxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSimplifyOutput(t *testing.T) {
	const dir = "/tmp/htc-check-123"
	out := strings.Join([]string{
		"[NOTICE]   (77) : haproxy version is 2.6.12-1+deb12u4",
		"[NOTICE]   (77) : path to executable is /usr/sbin/haproxy",
		"[ALERT]    123/456789 (77) : config : parsing [/tmp/htc-check-123/haproxy.cfg:10] : unknown keyword 'bogus' in 'defaults' section; did you mean 'bind' maybe ?",
		"[ALERT]    (77) : config : parsing [/tmp/htc-check-123/haproxy.cfg:12]: forbidden first char in environment variable name at position 22:",
		"  default_backend \"a$1\"",
		"                     ^",
		"[ALERT]    (77) : config : parsing [/tmp/htc-check-123/haproxy.cfg:14] : failed to open pattern file </tmp/htc-check-123/maps/host.map>.",
		"[ALERT]    (77) : config : parsing [/tmp/htc-check-123/haproxy.cfg:14] : failed to open pattern file </tmp/htc-check-123/maps/host.map>.",
		"[ALERT]    (77) : config : cannot open </tmp/other-dir/secret.pem>",
		"[WARNING]  (77) : config : parsing [/tmp/htc-check-123/haproxy.cfg:20] : 'option httplog' directive is ignored in backends.",
		"[ALERT]    (77) : config : Error(s) found in configuration file : /tmp/htc-check-123/haproxy.cfg",
		"[ALERT]    (77) : config : Fatal errors found in configuration.",
		"Warnings were found.",
		"",
	}, "\n")
	errs, warnings := SimplifyOutput(out, dir+"/")
	assert.Equal(t, []string{
		"haproxy.cfg:10: unknown keyword 'bogus' in 'defaults' section",
		"haproxy.cfg:12: forbidden first char in environment variable name at position 22:",
		"haproxy.cfg:14: failed to open pattern file <maps/host.map>",
		"cannot open <secret.pem>",
	}, errs)
	assert.Equal(t, []string{"haproxy.cfg:20: 'option httplog' directive is ignored in backends"}, warnings)
}

func TestJoinReasonCaps(t *testing.T) {
	short := JoinReason([]string{"a", "b"})
	assert.Equal(t, "a; b", short)
	long := JoinReason([]string{strings.Repeat("é", 400), strings.Repeat("x", 400)})
	assert.LessOrEqual(t, len(long), MaxReasonLen)
	assert.True(t, strings.HasSuffix(long, "…"))
	assert.True(t, strings.HasPrefix(long, "éé"))
}
