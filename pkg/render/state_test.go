package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

func TestPathFor(t *testing.T) {
	opts := []specOpt{withMap("host.map", "x"), withFile("errors/503.http", "x"), withCert("default.pem", "x")}
	tests := []struct {
		name, call, want, reason string
	}{
		{name: "map", call: `pathFor "map" "host.map"`, want: "/etc/haproxy/maps/host.map"},
		{name: "file in a sub-directory", call: `pathFor "file" "errors/503.http"`, want: "/etc/haproxy/files/errors/503.http"},
		{name: "cert", call: `pathFor "cert" "default.pem"`, want: "/etc/haproxy/certs/default.pem"},
		{name: "unknown kind", call: `pathFor "crt" "default.pem"`,
			reason: `template haproxy.cfg line 2: pathFor "crt" "default.pem": unknown kind "crt"; want "map", "file" or "cert"`},
		{name: "unknown map", call: `pathFor "map" "hosts.map"`,
			reason: `template haproxy.cfg line 2: pathFor map "hosts.map": no such map in spec.maps`},
		{name: "unknown cert", call: `pathFor "cert" "host.map"`,
			reason: `template haproxy.cfg line 2: pathFor cert "host.map": no such cert in spec.sslCertificates`},
		{name: "traversal", call: `pathFor "file" "../../etc/passwd"`,
			reason: `template haproxy.cfg line 2: pathFor file "../../etc/passwd": the name contains ".."; it must stay inside the bundle`},
		{name: "traversal in the middle", call: `pathFor "file" "errors/../../x"`,
			reason: `template haproxy.cfg line 2: pathFor file "errors/../../x": the name contains ".."; it must stay inside the bundle`},
		{name: "absolute", call: `pathFor "map" "/etc/passwd"`,
			reason: `template haproxy.cfg line 2: pathFor map "/etc/passwd": the name is an absolute path; want a name relative to the bundle`},
		{name: "empty", call: `pathFor "map" ""`,
			reason: `template haproxy.cfg line 2: pathFor map "": the name is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEngine(t, "global\n{{ "+tt.call+" }}", opts...)
			b, err := e.Render(context.Background(), Input{BaseDir: "/etc/haproxy"})
			if tt.reason != "" {
				assert.Equal(t, tt.reason, renderErr(t, err).Reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "global\n"+tt.want, b.Config)
		})
	}
}

func TestMutationGuard(t *testing.T) {
	newStores := func() (map[string]store.Reader, map[string]any) {
		ing := ingress("default", "web", "web.example.com", "api")
		return map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ing)}, ing
	}
	const refused = "cannot modify a resource object; copy it first with deepCopy"
	tests := []struct {
		name, tmpl, want, reason string
	}{
		{name: "set on a store object", tmpl: `{{ $_ := set . "kind" "Hacked" }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},
		{name: "set on a nested store map", tmpl: `{{ $_ := set .metadata.annotations "haproxy.org/timeout" "0" }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},
		{name: "unset on a store object", tmpl: `{{ $_ := unset .metadata "name" }}`,
			reason: "template haproxy.cfg line 1: unset: " + refused},
		{name: "merge into a store object", tmpl: `{{ $_ := merge . (dict "x" 1) }}`,
			reason: "template haproxy.cfg line 1: merge: " + refused},
		{name: "mergeOverwrite into a store object", tmpl: `{{ $_ := mergeOverwrite .metadata (dict "name" "x") }}`,
			reason: "template haproxy.cfg line 1: mergeOverwrite: " + refused},
		{name: "mustMerge into a store object", tmpl: `{{ $_ := mustMerge .spec (dict "x" 1) }}`,
			reason: "template haproxy.cfg line 1: mustMerge: " + refused},
		{name: "mustMergeOverwrite into a store object", tmpl: `{{ $_ := mustMergeOverwrite .spec (dict "x" 1) }}`,
			reason: "template haproxy.cfg line 1: mustMergeOverwrite: " + refused},
		{name: "merge into a store map nested in a dict", tmpl: `{{ $d := dict "metadata" .metadata }}{{ $_ := merge $d (dict "metadata" (dict "x" 1)) }}`,
			reason: "template haproxy.cfg line 1: merge: " + refused + ` (key "metadata" of the destination)`},
		{name: "set on a store map reached through a dict", tmpl: `{{ $d := dict "m" .metadata }}{{ $_ := set $d.m "x" 1 }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},
		{name: "set on a store map merged into a dict", tmpl: `{{ $d := dict }}{{ $_ := merge $d . }}{{ $_ := set $d.metadata "x" 1 }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},
		{name: "set on the context", tmpl: `{{ $_ := set $ "x" 1 }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},
		{name: "set on extraContext", tmpl: `{{ $_ := set $.extraContext "x" 1 }}`,
			reason: "template haproxy.cfg line 1: set: " + refused},

		{name: "set on a dict", tmpl: `{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ toJson $d }}`, want: `{"a":1,"b":2}`},
		{name: "unset on a dict", tmpl: `{{ $d := dict "a" 1 "b" 2 }}{{ $_ := unset $d "a" }}{{ toJson $d }}`, want: `{"b":2}`},
		{name: "set on a deep copy", tmpl: `{{ $c := deepCopy . }}{{ $_ := set $c.metadata.annotations "haproxy.org/timeout" "9s" }}{{ field $c "metadata.annotations['haproxy.org/timeout']" }} {{ field . "metadata.annotations['haproxy.org/timeout']" }}`,
			want: "9s 5s"},
		{name: "set inside a list of a deep copy", tmpl: `{{ $c := mustDeepCopy . }}{{ $_ := set (index $c.spec.rules 0) "host" "other" }}{{ field $c "spec.rules[0].host" }}`,
			want: "other"},
		{name: "set on fromJson", tmpl: `{{ $j := fromJson "{\"a\":{\"b\":1}}" }}{{ $_ := set $j.a "c" 2 }}{{ toJson $j }}`, want: `{"a":{"b":1,"c":2}}`},
		{name: "set on pick, omit, urlParse", tmpl: `{{ $p := pick .metadata "name" }}{{ $_ := set $p "x" 1 }}{{ $o := omit .metadata "annotations" }}{{ $_ := set $o "y" 2 }}{{ $u := urlParse "http://a/b" }}{{ $_ := set $u "path" "/c" }}{{ toJson $p }} {{ toJson $o }} {{ urlJoin $u }}`,
			want: `{"name":"web","x":1} {"name":"web","namespace":"default","y":2} http://a/c`},
		{name: "merge dicts", tmpl: `{{ $a := dict "x" (dict "p" 1) }}{{ $_ := merge $a (dict "x" (dict "q" 2) "y" 3) }}{{ toJson $a }}`,
			want: `{"x":{"p":1,"q":2},"y":3}`},
		{name: "mergeOverwrite a store object into a dict leaves the object alone", tmpl: `{{ $d := dict "kind" "Mine" }}{{ $_ := mergeOverwrite $d . }}{{ $d.kind }} {{ .kind }}`,
			want: "Ingress Ingress"},

		{name: "set making a cycle", tmpl: `{{ $a := dict }}{{ $_ := set $a "self" $a }}`,
			reason: "template haproxy.cfg line 1: set: the result would contain itself (a cycle)"},
		{name: "set making an indirect cycle", tmpl: `{{ $a := dict }}{{ $b := dict "l" (list $a) }}{{ $_ := set $a "b" $b }}`,
			reason: "template haproxy.cfg line 1: set: the result would contain itself (a cycle)"},
		{name: "merge making a cycle", tmpl: `{{ $a := dict }}{{ $_ := merge $a (dict "x" $a) }}`,
			reason: "template haproxy.cfg line 1: merge: the result would contain itself (a cycle)"},
		{name: "set making a cycle through a chunked list", tmpl: `{{ $a := dict }}{{ $_ := set $a "c" (chunk 1 (list $a)) }}`,
			reason: "template haproxy.cfg line 1: set: the result would contain itself (a cycle)"},
		{name: "set making a cycle through a copied store list", tmpl: `{{ $l := deepCopy $.resources.ingresses.List }}{{ $_ := set (index $l 0) "l" $l }}`,
			reason: "template haproxy.cfg line 1: set: the result would contain itself (a cycle)"},
		{name: "set on a copied store list's element", tmpl: `{{ $l := deepCopy $.resources.ingresses.List }}{{ $_ := set (index $l 0).metadata "name" "copy" }}{{ (index $l 0).metadata.name }} {{ .metadata.name }}`,
			want: "copy web"},
		{name: "sharing without a cycle is fine", tmpl: `{{ $in := dict "v" 1 }}{{ $a := dict "p" $in "q" $in }}{{ $_ := set $a "r" $in }}{{ toJson $a }}`,
			want: `{"p":{"v":1},"q":{"v":1},"r":{"v":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores, ing := newStores()
			snapshot := deepCopyJSON(t, ing)
			e := mustEngine(t, `{{ range .resources.ingresses.List }}`+tt.tmpl+`{{ end }}`, withExtra(`{"a": 1}`))
			b, err := e.Render(context.Background(), Input{Stores: stores})
			if tt.reason != "" {
				assert.Equal(t, tt.reason, renderErr(t, err).Reason)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, b.Config)
			}
			assert.Equal(t, snapshot, ing, "the store object was modified")
			assert.Equal(t, map[string]any{"a": int64(1)}, e.extra, "extraContext was modified")
		})
	}
}

// deepCopyJSON copies a JSON-like value.
func deepCopyJSON(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	c, err := newRenderState(nil, "").mustDeepCopy(m)
	require.NoError(t, err)
	return c.(map[string]any)
}
