package dataplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadMapOrderKnowsTheMapConvertersOnly(t *testing.T) {
	const m = "/etc/haproxy/maps/r.map"
	tests := []struct {
		name, cfg string
		want      mapOrder
	}{
		{"exact converters", "  use_backend %[req.hdr(host),map(" + m + ")]\n  http-request set-var(txn.x) path,map_str(" + m + ",none)\n", mapOrderFree},
		{"prefix converters", "  http-request set-var(txn.x) path,map_beg(" + m + ")\n  http-request set-var(txn.y) path,map_beg_int(" + m + ",0)\n", mapOrderFree},
		{"a list converter", "  http-request set-var(txn.x) path,map_reg(" + m + ")\n", mapOrdered},
		{"a tree and a list converter", "  x path,map_str(" + m + ") path,map_end(" + m + ")\n", mapOrdered},
		{"a list and a tree converter", "  x path,map_dom(" + m + ") path,map_beg(" + m + ")\n", mapOrdered},
		{"an ACL's pattern file", "  x path,map(" + m + ")\n  acl a path -f " + m + "\n", mapUnknown},
		{"set-map", "  x path,map(" + m + ")\n  http-request set-map(" + m + ") a b\n", mapUnknown},
		{"another converter's argument", "  x path,concat(" + m + ")\n", mapUnknown},
		{"a longer path", "  x path,map(" + m + ".old)\n", mapUnknown},
		{"a comment", "  x path,map(" + m + ")\n  # reads " + m + "\n", mapUnknown},
		{"not read", "  x path,map(/etc/haproxy/maps/other.map)\n", mapUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, readMapOrder(tt.cfg, m))
		})
	}
}

// TestMapDeltaChangesOneEntryByOneCommandAndNothingMore is the rule of
// mapDelta: exactly one entry added (at the end, or anywhere in a tree
// map) of a new key, one value changed or one entry removed of a key the
// map has once; everything else replaces the map whole (false).
func TestMapDeltaChangesOneEntryByOneCommandAndNothingMore(t *testing.T) {
	const base = "a 1\nb 2\nc 3\n"
	tests := []struct {
		name     string
		old, new string
		order    mapOrder
		want     *mapEdit
	}{
		{"one entry added at the end is add map", base, base + "d 4\n", mapOrdered, &mapEdit{"add", "d", "4"}},
		{"one entry added to an empty map is add map", "", "a 1\n", mapOrdered, &mapEdit{"add", "a", "1"}},
		{"one entry added in the middle of an ordered map replaces it", base, "a 1\nd 4\nb 2\nc 3\n", mapOrdered, nil},
		{"one entry added in the middle of a tree map is add map", base, "a 1\nab 4\nb 2\nc 3\n", mapOrderFree, &mapEdit{"add", "ab", "4"}},
		{"one entry of a key the map has replaces it", base, base + "b 4\n", mapOrdered, nil},
		{"one entry of a key a tree map has replaces it", base, "a 1\nb 0\nb 2\nc 3\n", mapOrderFree, nil},
		{"two entries added replace it", base, base + "d 4\ne 5\n", mapOrderFree, nil},
		{"one value changed is set map", base, "a 1\nb 9\nc 3\n", mapOrdered, &mapEdit{"set", "b", "9"}},
		{"a value with blanks changed is set map", base, "a 1\nb 9  x y\nc 3\n", mapOrdered, &mapEdit{"set", "b", "9  x y"}},
		{"a value of a key the map has twice replaces it", base + "b 7\n", "a 1\nb 9\nc 3\nb 7\n", mapOrdered, nil},
		{"two values changed replace it", base, "a 1\nb 9\nc 8\n", mapOrderFree, nil},
		{"a key changed replaces it", base, "a 1\nx 2\nc 3\n", mapOrderFree, nil},
		{"one entry removed is del map", base, "a 1\nc 3\n", mapOrdered, &mapEdit{"del", "b", ""}},
		{"the last entry removed is del map", "a 1\n", "", mapOrdered, &mapEdit{"del", "a", ""}},
		{"an entry of a key the map has twice removed replaces it", base + "b 7\n", "a 1\nc 3\nb 7\n", mapOrderFree, nil},
		{"two entries removed replace it", base, "a 1\n", mapOrdered, nil},
		{"one removed and one added replace it", base, "a 1\nc 3\nd 4\n", mapOrderFree, nil},
		{"entries reordered in an ordered map replace it", base, "b 2\na 1\nc 3\n", mapOrdered, nil},
		{"a key starting with # is not sent", "a 1\n", "a 1\n#x 2\n", mapOrdered, nil},
		{"a map read otherwise is replaced", base, base + "d 4\n", mapUnknown, nil},
		{"an entry without a value is not sent", base, base + "d\n", mapOrdered, nil},
		{"comments and blank lines are not entries", base, "# routes\n\n" + base + "d 4\n", mapOrdered, &mapEdit{"add", "d", "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mapDelta(tt.old, tt.new, tt.order)
			if tt.want == nil {
				assert.False(t, ok, "%+v", got)
				return
			}
			assert.True(t, ok)
			assert.Equal(t, *tt.want, got)
		})
	}
}

func TestMapEditCommandsEscapeKeysAndValuesForTheCLI(t *testing.T) {
	const path = "/etc/haproxy/maps/r.map"
	cmd, payload := mapEdit{"add", "k;#\\x", "v a;b"}.command(path)
	assert.Equal(t, "add map /etc/haproxy/maps/r.map", cmd)
	assert.Equal(t, "k;#\\x v a;b\n", payload)
	cmd, payload = mapEdit{"set", "k;#\\x", "v a;b"}.command(path)
	assert.Equal(t, `set map /etc/haproxy/maps/r.map k\;\#\\x v\ a\;b`, cmd)
	assert.Empty(t, payload)
	cmd, _ = mapEdit{"del", "k;#\\x", ""}.command(path)
	assert.Equal(t, `del map /etc/haproxy/maps/r.map k\;\#\\x`, cmd)
}
