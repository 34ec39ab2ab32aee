package haproxy

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// skippedDefaultPath are conditional blocks around "default-path origin
// files" that HAProxy skips, in every form of issue 23: after them a
// relative "maps/host.map" is the bundle's map, not files/maps/host.map.
var skippedDefaultPath = map[string]string{
	"if 0":                ".if 0\n    default-path origin files\n.endif\n",
	"if streq":            ".if streq(a,b)\n    default-path origin files\n.endif\n",
	"if version_before":   ".if version_before(1.0)\n    default-path origin files\n.endif\n",
	"else of a true if":   ".if 1\n.else\n    default-path origin files\n.endif\n",
	"nested":              ".if 1\n.if !1\n    default-path origin files\n.endif\n.endif\n",
	"elif after a true":   ".if 1\n.elif 1\n    default-path origin files\n.endif\n",
	"if after a carriage": ".if 1\r.if 0\n.endif\n    maxconn 10\n",
}

// typedRules read maps/host.map relative to the working directory with a
// reader that parses its content, after a plain-string reference to it.
var typedRules = map[string]string{
	"map_int":          "    http-request set-var(txn.n) req.hdr(x),map_int(maps/host.map)\n",
	"map_ip":           "    http-request set-var(txn.n) src,map_ip(maps/host.map)\n",
	"map_str_int":      "    http-request set-var(txn.n) req.hdr(x),map_str_int(maps/host.map)\n",
	"map_reg":          "    http-request set-var(txn.n) req.hdr(x),map_reg(maps/host.map)\n",
	"acl -M -m ip":     "    acl typed src -M -m ip -f maps/host.map\n    http-request deny if typed\n",
	"acl -M -m int":    "    acl typed req.hdr_cnt(x) -M -m int -f maps/host.map\n    http-request deny if typed\n",
	"lf-file":          "    http-request return status 200 lf-file maps/host.map if { path /x }\n",
	"use_backend late": "    use_backend %[req.hdr(x),map_int(maps/host.map)] if { path /y }\n",
}

// condSkipConfig is testConfig with a global block and a typed rule.
func condSkipConfig(block, rule string) string {
	return strings.Replace(testConfig(""), "global\n", "global\n"+block, 1) +
		"frontend typed\n    bind 127.0.0.1:18081\n" + rule + "    default_backend be0\n"
}

// TestLooseMapsFollowConditionalBlocks: a typed reader behind a skipped
// default-path still makes the map not loose (the map-only skip of
// issue 23).
func TestLooseMapsFollowConditionalBlocks(t *testing.T) {
	for bname, block := range skippedDefaultPath {
		for rname, rule := range typedRules {
			b := &bundle.Bundle{BaseDir: testBase, Config: strings.ReplaceAll(condSkipConfig(block, rule), "{{dir}}", testBase),
				Maps: testMaps(), Files: map[string]string{"maps/host.map": "1 be0\n"}}
			s, err := policy.Evaluate(b, nil, testVersion)
			require.NoError(t, err, "%s, %s", bname, rname)
			assert.False(t, s.LooseMaps["host.map"], "%s, %s: host.map is read by %s", bname, rname, rname)
		}
	}
}

// TestMapOnlySkipBehindConditionsAgainstHAProxy is issue 23's false allow,
// end to end with the real binary: a bundle accepted by haproxy -c, then
// the same bundle with only host.map changed to a content the typed reader
// refuses. The second check must run haproxy -c and fail.
func TestMapOnlySkipBehindConditionsAgainstHAProxy(t *testing.T) {
	c := realChecker(t, Options{SkipSyntax: true, SkipSchema: true})
	ws := newTestWorkspace(t)
	for _, bname := range []string{"if 0", "else of a true if", "nested"} {
		for _, rname := range []string{"map_int", "acl -M -m ip"} {
			cfg := condSkipConfig(skippedDefaultPath[bname], typedRules[rname])
			good := map[string]string{"host.map": "10 be0\n"}
			if rname == "acl -M -m ip" {
				good = map[string]string{"host.map": "10.0.0.1 be0\n"}
			}
			res, err := c.Check(context.Background(), bundleFor(ws.Dir(), cfg, good, map[string]string{"maps/host.map": "1 be0\n"}))
			require.NoError(t, err, "%s, %s: the good bundle", bname, rname)
			require.False(t, res.SemanticReused)
			res, err = c.Check(context.Background(), bundleFor(ws.Dir(), cfg, testMaps(), map[string]string{"maps/host.map": "1 be0\n"}))
			assert.Error(t, err, "%s, %s: haproxy -c refuses example.com for %s", bname, rname, rname)
			assert.False(t, res.SemanticReused, "%s, %s", bname, rname)
		}
	}
}
