package bundle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRelocated(t *testing.T) {
	const ws = "/tmp/x/htc-check-1"
	const out = "/etc/haproxy"
	tests := []struct {
		name    string
		in      Bundle
		baseDir string
		want    Bundle
	}{
		{
			name: "every file kind is rewritten",
			in: Bundle{
				BaseDir: ws,
				Config:  "map_beg(" + ws + "/maps/host.map)\nerrorfile 503 " + ws + "/files/errors/503.http\ncrt " + ws + "/certs/a.pem crt " + ws + "/certs/b.pem\n",
				Maps:    map[string]string{"host.map": "x " + ws + "/maps/other.map\n"},
				Files:   map[string]string{"errors/503.http": ws + "/files/x"},
				Certs:   map[string]string{"a.pem": "see " + ws + "/certs/b.pem"},
			},
			baseDir: out,
			want: Bundle{
				BaseDir: out,
				Config:  "map_beg(" + out + "/maps/host.map)\nerrorfile 503 " + out + "/files/errors/503.http\ncrt " + out + "/certs/a.pem crt " + out + "/certs/b.pem\n",
				Maps:    map[string]string{"host.map": "x " + out + "/maps/other.map\n"},
				Files:   map[string]string{"errors/503.http": out + "/files/x"},
				Certs:   map[string]string{"a.pem": "see " + out + "/certs/b.pem"},
			},
		},
		{
			name: "an occurrence not followed by a separator is left alone",
			in: Bundle{
				BaseDir: ws,
				Config:  "a " + ws + "2/maps/x\nb " + ws + "\nc " + ws + "-other/y\nd " + ws + "/maps/x",
			},
			baseDir: out,
			want: Bundle{
				BaseDir: out,
				Config:  "a " + ws + "2/maps/x\nb " + ws + "\nc " + ws + "-other/y\nd " + out + "/maps/x",
			},
		},
		{
			name:    "trailing separators do not matter",
			in:      Bundle{BaseDir: ws + "/", Config: ws + "/maps/x"},
			baseDir: out + "/",
			want:    Bundle{BaseDir: out + "/", Config: out + "/maps/x"},
		},
		{
			name:    "the new directory containing the old one is not rewritten twice",
			in:      Bundle{BaseDir: "/a", Config: "/a/maps/x /a/b/maps/y"},
			baseDir: "/a/a",
			want:    Bundle{BaseDir: "/a/a", Config: "/a/a/maps/x /a/a/b/maps/y"},
		},
		{
			name:    "same BaseDir is a plain copy",
			in:      Bundle{BaseDir: out, Config: out + "/maps/x", Maps: map[string]string{"m": out + "/maps/m"}},
			baseDir: out,
			want:    Bundle{BaseDir: out, Config: out + "/maps/x", Maps: map[string]string{"m": out + "/maps/m"}},
		},
		{
			name:    "empty old BaseDir is a plain copy with the new BaseDir",
			in:      Bundle{Config: "/maps/x", Maps: map[string]string{"m": "/certs/y"}},
			baseDir: out,
			want:    Bundle{BaseDir: out, Config: "/maps/x", Maps: map[string]string{"m": "/certs/y"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Maps, in.Files, in.Certs = copyContents(tt.in.Maps), copyContents(tt.in.Files), copyContents(tt.in.Certs)
			got := in.Relocated(tt.baseDir)
			assert.Equal(t, &tt.want, got)
			assert.Equal(t, tt.in, in, "the receiver is not modified")
		})
	}
}

func TestRelocatedCopiesMaps(t *testing.T) {
	b := &Bundle{BaseDir: "/a", Maps: map[string]string{"m": "x"}, Files: map[string]string{"f": "y"}, Certs: map[string]string{"c": "z"}}
	for _, dir := range []string{"/a", "/b"} {
		got := b.Relocated(dir)
		got.Maps["m"], got.Files["f"], got.Certs["c"] = "changed", "changed", "changed"
		assert.Equal(t, "x", b.Maps["m"], dir)
		assert.Equal(t, "y", b.Files["f"], dir)
		assert.Equal(t, "z", b.Certs["c"], dir)
	}
}
