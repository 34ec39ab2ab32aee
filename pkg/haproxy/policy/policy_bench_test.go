package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// policyBenchBundle is a configuration with n backends that exercises every
// rule: TLS with a crt-list, a host map, an ACL file, errorfiles, header
// rules with converters and http actions, three servers per backend.
func policyBenchBundle(n int) *bundle.Bundle {
	var cfg, hosts, crts strings.Builder
	fmt.Fprintf(&cfg, `global
    log stdout format raw local0
    crt-base %[1]s/certs
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    errorfile 503 %[1]s/files/503.http
frontend fe
    bind 127.0.0.1:8443 ssl crt-list %[1]s/files/crt.lst alpn h2,http/1.1
    acl blocked src -f %[1]s/files/blocked.lst
    http-request deny if blocked
    http-request set-header X-Forwarded-Proto https
    use_backend %%[req.hdr(host),lower,map(%[1]s/maps/host.map,be0)]
`, testBase)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&cfg, "backend be%d\n    balance roundrobin\n    option httpchk GET /healthz\n", i)
		fmt.Fprintf(&cfg, "    http-request set-header X-Backend be%d if { path_beg /api }\n", i)
		for s := 0; s < 3; s++ {
			fmt.Fprintf(&cfg, "    server s%d 127.0.%d.%d:%d check weight 10\n", s, (i/250)%256, i%250+1, 8080+s)
		}
		fmt.Fprintf(&hosts, "host%d.example.com be%d\n", i, i)
		fmt.Fprintf(&crts, "c%d.pem [alpn h2] host%d.example.com\n", i%100, i)
	}
	return &bundle.Bundle{
		BaseDir: testBase,
		Config:  cfg.String(),
		Maps:    map[string]string{"host.map": hosts.String()},
		Files:   map[string]string{"crt.lst": crts.String(), "blocked.lst": "10.0.0.1\n", "503.http": "HTTP/1.0 503\r\n\r\n"},
	}
}

// BenchmarkCheckPolicy runs the policy on 1,000 and 10,000 backends (about
// 8 and 80 thousand lines, with 1 and 10 thousand map and crt-list lines).
func BenchmarkCheckPolicy(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		bdl := policyBenchBundle(n)
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(bdl.Config) + len(bdl.Maps["host.map"]) + len(bdl.Files["crt.lst"])))
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(bdl, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// adversarial inputs whose cost must grow linearly with their size.
var adversarial = map[string]func(n int) string{
	"converters": func(n int) string { return "frontend f\n    use_backend " + strings.Repeat("map(", n/4) + "\n" },
	"quotes":     func(n int) string { return "global\n    log-tag " + strings.Repeat(`"'`, n/2) + "\n" },
	"cr":         func(n int) string { return "global\n    log-tag " + strings.Repeat("x\r", n/2) + "\n" },
	"expansions": func(n int) string { return "global\n    log-tag \"" + strings.Repeat("$A", n/2) + "\"\n" },
	"parens":     func(n int) string { return "frontend f\n    use_backend " + strings.Repeat("a(", n/2) + "\n" },
	"lines":      func(n int) string { return strings.Repeat("backend b\n    server s /x\n", n/24) },
	"words":      func(n int) string { return "frontend f\n    bind :80 " + strings.Repeat("crt ", n/4) + "\n" },
}

// BenchmarkCheckPolicyAdversarial measures the adversarial inputs at 64 KiB
// and 1 MiB: ns/op must grow by about 16 between them.
func BenchmarkCheckPolicyAdversarial(b *testing.B) {
	for _, name := range sortedKeys(adversarial) {
		for _, n := range []int{64 << 10, 1 << 20} {
			cfg := adversarial[name](n)
			b.Run(fmt.Sprintf("%s/bytes=%d", name, n), func(b *testing.B) {
				b.SetBytes(int64(len(cfg)))
				bdl := &bundle.Bundle{BaseDir: testBase, Config: cfg}
				for b.Loop() {
					_ = Check(bdl, nil)
				}
			})
		}
	}
}
