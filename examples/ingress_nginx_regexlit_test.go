package examples_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestNginxLiteralRegexHostsMatchAsTheirRegularExpressions checks the
// "lit" regex hosts (ngx-regex-literal: locations looked up by exact and
// prefix strings, lower case) against the full computation: the same
// library with the shortcut off (ngx-regex-literal prints nothing, no
// path of a plain Ingress is taken as a literal), which puts every regex
// host's paths in the regular expression map. Over generated hosts with
// regex Ingresses (use-regex, or rewrite-target) of paths that are
// literals with every ending ngx-regex-literal knows and some it does
// not, and plain Ingresses on the same hosts, every request path tried
// (derived from the paths: the literal, with a slash, longer, shorter,
// upper case) finds the same location in both: the regular expressions
// tried in the regex map's order, the first match winning (Go's regexp,
// which agrees with PCRE on these), or exact then longest prefix.
func TestNginxLiteralRegexHostsMatchAsTheirRegularExpressions(t *testing.T) {
	current, cfg := ngxEngine(t, nil)
	full, _ := ngxEngineWith(t, nil, func(spec *config.HAProxyTemplateConfigSpec) {
		s := spec.TemplateSnippets["ngx-regex-literal"]
		s.Template = ""
		spec.TemplateSnippets["ngx-regex-literal"] = s
		const plain = `regexMatch "^[A-Za-z0-9/_~:&=,;'!@-]*$" $e`
		require.Contains(t, spec.HAProxyConfig.Template, plain)
		spec.HAProxyConfig.Template = strings.Replace(spec.HAProxyConfig.Template, plain, "false", 1)
	})
	literals := []string{"/app", "/App", "/api", "/api/v1", "/a", "/", "/app/admin", "/docs/", "/x-y_z"}
	endings := []string{"", ".*", "(.*)", "/?", "/?(.*)", "(/.*)?", "$", "/?$", "(/|$)", "(/|$)(.*)", "(/|$).*", "(/.*)?$",
		"[0-9]+", "/(.*)", ".json", "(/|$)([a-z]+)", "s?", "+"}
	plainPaths := []string{"/static", "/app", "/a.b", "/api/", "/", "/App/x"}
	kinds := map[string]int{}
	for i := range 150 {
		r := rand.New(rand.NewPCG(uint64(i), 34))
		parts := []string{serviceDoc("default", "echo")}
		var tried []string // the paths of the state
		for h := range 1 + r.IntN(3) {
			host := fmt.Sprintf("h%d.example.com", h)
			seen := map[string]bool{}
			var rx []string
			for range 1 + r.IntN(4) {
				p := literals[r.IntN(len(literals))] + endings[r.IntN(len(endings))]
				if !seen[p] && regexp.MustCompile(`^/`).MatchString(p) {
					seen[p] = true
					rx = append(rx, pick(r, "ImplementationSpecific", "Prefix", "Exact")+" "+p+" echo:80")
					tried = append(tried, p)
				}
			}
			ann := map[string]string{"use-regex": "true"}
			if r.IntN(4) == 0 {
				ann = map[string]string{"rewrite-target": "/"}
			}
			parts = append(parts, ingressDoc("default", fmt.Sprintf("rx%d", h), ann, map[string][]string{host: rx}))
			if r.IntN(2) == 0 {
				var ps []string
				for range 1 + r.IntN(2) {
					p := plainPaths[r.IntN(len(plainPaths))]
					if !seen[p] {
						seen[p] = true
						ps = append(ps, pick(r, "ImplementationSpecific", "Prefix", "Exact")+" "+p+" echo:80")
						tried = append(tried, p)
					}
				}
				if len(ps) > 0 {
					parts = append(parts, ingressDoc("default", fmt.Sprintf("plain%d", h), nil, map[string][]string{host: ps}))
				}
			}
		}
		stores := store.ReadOnly(gatewayStores(t, cfg, ngxObjects(t, docs(parts...), nil)))
		in := htcrender.Input{Stores: stores, BaseDir: "/b"}
		got, gotErr := current.Render(context.Background(), in)
		want, wantErr := full.Render(context.Background(), in)
		require.Equal(t, wantErr == nil, gotErr == nil, "state %d: %v %v", i, wantErr, gotErr)
		if wantErr != nil {
			kinds["fails"]++
			continue
		}
		var requests []string
		lead := regexp.MustCompile(`^[A-Za-z0-9/_~:&=,;'!@-]*`)
		for _, p := range tried {
			l := lead.FindString(p)
			requests = append(requests, l, l+"/", l+"x", l+"/x", l+"/y/z", strings.ToUpper(l), strings.ToLower(l)+"/Q", l+".json", l+"1", l[:max(1, len(l)-1)])
		}
		requests = append(requests, "/", "/zzz")
		for _, line := range mapLines(want.Maps["regexservers.map"]) {
			server, mode := line[0], line[1]
			require.Equal(t, "1", mode, "state %d: with the shortcut off every regex host is in the regex map", i)
			gotMode := mapValue(got.Maps["regexservers.map"], server)
			kinds[gotMode]++
			for _, path := range requests {
				assert.Equal(t, ngxRegexHostLocation(t, want, server, path), ngxRegexHostLocation(t, got, server, path),
					"state %d: host %s (%s) path %s\nregex map:\n%s", i, server, gotMode, path, want.Maps["regex.map"])
			}
		}
	}
	t.Logf("regex hosts: %v", kinds)
	assert.Greater(t, kinds["lit"], 40, "many hosts are lit")
	assert.Greater(t, kinds["1"], 100, "many keep the regex map")
}

// ngxRegexHostLocation is the location a request for path finds on the
// regex host server of bundle b, as its frontend looks it up ("" none:
// the host's root): on a "lit" host the lower-cased host and path in
// rxexact.map, else its longest prefix in rxprefix.map; else the first
// line of regex.map that matches.
func ngxRegexHostLocation(t *testing.T, b *bundle.Bundle, server, path string) string {
	sp := server + path
	switch mode := mapValue(b.Maps["regexservers.map"], server); mode {
	case "lit":
		low := strings.ToLower(sp)
		if loc := mapValue(b.Maps["rxexact.map"], low); loc != "" {
			return loc
		}
		best, loc := -1, ""
		for _, l := range mapLines(b.Maps["rxprefix.map"]) {
			if strings.HasPrefix(low, l[0]) && len(l[0]) > best {
				best, loc = len(l[0]), l[1]
			}
		}
		return loc
	case "1":
		for _, l := range mapLines(b.Maps["regex.map"]) {
			if regexp.MustCompile(l[0]).MatchString(sp) {
				return l[1]
			}
		}
		return ""
	default:
		t.Fatalf("host %s: regexservers.map says %q", server, mode)
		return ""
	}
}

// mapLines are the key and value of each line of a map file.
func mapLines(text string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// mapValue is the value of key in a map file ("" none).
func mapValue(text, key string) string {
	for _, l := range mapLines(text) {
		if l[0] == key {
			return l[1]
		}
	}
	return ""
}

// pick is one of xs, by r.
func pick(r *rand.Rand, xs ...string) string { return xs[r.IntN(len(xs))] }
