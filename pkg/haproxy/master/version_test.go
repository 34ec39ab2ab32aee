package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionFake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handle  func(string) reply
		want    string
		wantErr string
	}{
		{"show version", func(cmd string) reply {
			if cmd == "show version" {
				return reply{text: "3.0.11-1+deb13u5\n\n"}
			}
			return reply{text: "Unknown command\n"}
		}, "3.0.11-1+deb13u5", ""},
		{"show proc when show version is unknown", func(cmd string) reply {
			if cmd == "show proc" {
				return reply{text: procText(10, 1, 0, 100)}
			}
			return reply{text: "Unknown command, but maybe one of the following ones is a better match:\n  show proc : show processes status\n"}
		}, "2.6.12-1+deb12u4", ""},
		{"no version anywhere", func(cmd string) reply {
			if cmd == "show proc" {
				return reply{text: "#<PID> <type> <reloads>\n10 master 1\n# workers\n"}
			}
			return reply{text: "Unknown command\n"}
		}, "", "neither show version nor show proc says the version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, tc.handle)
			got, err := (&Client{SocketPath: f.path}).Version(t.Context())
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
