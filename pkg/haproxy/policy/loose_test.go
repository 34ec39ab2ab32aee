package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// TestLooseMapsAgainstHAProxy30 is the differential test behind reusing an
// accepted run: 10,000 random map files (any bytes: blanks, comments,
// control characters, NULs, CRs, long and empty lines), each read by a
// plain-string map converter, are all accepted by haproxy -c; the same
// files read as addresses are not, so the harness can see a refusal.
func TestLooseMapsAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	rnd := rand.New(rand.NewPCG(3, 0))
	converters := []string{"map", "map_str", "map_beg", "map_dir", "map_dom", "map_end", "map_sub"}
	for _, conv := range converters {
		require.True(t, looseConverter(conv), conv)
	}
	for _, conv := range []string{"map_ip", "map_int", "map_reg", "map_regm", "map_beg_int", "map_str_ip"} {
		require.False(t, looseConverter(conv), conv)
	}
	const files, perRun = 10000, 200
	dir := t.TempDir()
	run := func(batch int, conv func(i int) string) (string, error) {
		var cfg strings.Builder
		cfg.WriteString("global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend f\n    bind 127.0.0.1:1\n")
		for i := range perRun {
			name := filepath.Join(dir, fmt.Sprintf("%d-%d.map", batch, i))
			require.NoError(t, os.WriteFile(name, randomMapFile(rnd), 0o600))
			fmt.Fprintf(&cfg, "    http-request set-var(txn.v%d) path,%s(%s)\n", i, conv(i), name)
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.cfg", batch))
		require.NoError(t, os.WriteFile(path, []byte(cfg.String()), 0o600))
		out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput()
		return string(out), err
	}
	for batch := range files / perRun {
		out, err := run(batch, func(i int) string { return converters[i%len(converters)] })
		require.NoError(t, err, "haproxy -c refused a plain-string map:\n%s", out)
	}
	out, err := run(files/perRun, func(int) string { return "map_ip" })
	require.Error(t, err, "addresses read from random files: the harness sees no refusal")
	assert.Contains(t, out, "map_ip")
}

// randomMapFile returns up to 40 random lines of map content.
func randomMapFile(rnd *rand.Rand) []byte {
	pieces := []string{"a", "example.com", "/", "/api/", "be_1", " ", "\t", "#", "\r", "\x00", "\x01", "\x7f", "é", "\\", "\"", "'", "$HOME", "%[", "{", "0", "-1", "10.0.0.1", "::1"}
	var b strings.Builder
	for range rnd.IntN(40) {
		switch rnd.IntN(20) {
		case 0:
			b.WriteString(strings.Repeat("k", rnd.IntN(3*mapfile.LineMax)))
		case 1: // an empty line
		default:
			for range 1 + rnd.IntN(8) {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
