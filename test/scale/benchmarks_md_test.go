package scale

import (
	"fmt"
	"os"
	"strings"
)

// The section of BENCHMARKS.md the harness owns; one block per N inside
// it, replaced on every run for that N.
const (
	sectionTitle = "## At scale: a real API server, the controller as a process (`make bench-scale`)"
	sectionIntro = `Written by ` + "`make bench-scale N=1000|10000 [WORKLOAD=gateway] [RUNS=n] [REQUESTS=n] [PROFILE=dir]`" + ` (test/scale; it
replaces the block of its workload and N on every run). It starts etcd and kube-apiserver on
127.0.0.1 from the test assets, installs the CRD and the example Ingress library
(` + "`extraContext.bindAddress: 127.0.0.1`" + `; the Gateway library keeps its defaults), creates N Ingresses, N headless
Services and N EndpointSlices (internal/testutil.ClusterApp, 50 namespaces, each
object with the last-applied annotation ` + "`kubectl apply`" + ` leaves), plus RUNS ×
REQUESTS spare Services with their EndpointSlices that no Ingress uses, and runs
` + "`bin/htc controller --output-dir`" + ` as a process. Each run starts a fresh
controller, waits for /readyz, the live configuration valid and published and the
config's Valid condition, then POSTs AdmissionReviews over HTTPS to /validate: a
first CREATE, then, one at a time and each after a bare ` + "`haproxy -c`" + ` of the
published configuration (the floor, so the floor and the admissions share the
machine's load) and one with the environment the checker gives it (its
allocator backed by huge pages: the checker's own ` + "`haproxy -c`" + ` is faster than
the bare one, and the ratios to both are shown), REQUESTS × CREATE of a new Ingress routing to a Service another
Ingress uses already ("new route, existing backend": under the example library
only the routing maps change, so its check reuses the ` + "`haproxy -c`" + ` run that
accepted the live configuration), REQUESTS × CREATE of a new Ingress routing to
a spare Service ("adding a backend": haproxy.cfg gains a backend section, so it
costs a render plus ` + "`haproxy -c`" + `; every sample has a new name and a spare
of its own, so no cached decision or result answers it), and REQUESTS ×
label-only UPDATE of an existing Ingress; then 16 clients for 60 s sending
distinct CREATEs (new routes to existing backends) back to back, and 16 sending
one identical CREATE. With ` + "`WORKLOAD=gateway`" + ` the routes are HTTPRoutes of the Gateway
library instead (the Gateway API's standard CRDs from the module go.mod requires,
one GatewayClass and one Gateway, htc-system/gw, whose HTTP listener takes routes
from every namespace; each HTTPRoute routes its host, path prefix /, to its
Service), in the same rows; measuring starts once the controller has written
the status of every HTTPRoute and the Gateway counts them all (its first
status writes, one per route, are watch events and new live states). Their allowed/s ÷ (cores ÷ floor p50) is the throughput
of allowed admissions as a share of the bare ` + "`haproxy -c`" + ` runs the cores
could do: busy and timed-out denials are answers but not admissions. The client
gives up at the chart's webhook timeout (an error). Ratios are to the floor of
the same run; REQUESTS is 20 unless given, and a p99 of 20 samples is their maximum (of
100, the second slowest). The machine is shared: read the
load average beside each run.
`
)

// markerPrefix starts the markers of w's blocks (the Ingress workload's
// are as they were before there were workloads).
func markerPrefix(w workload) string {
	if w.name == "ingress" {
		return "<!-- bench-scale N="
	}
	return "<!-- bench-scale WORKLOAD=" + w.name + " N="
}

func blockMarkers(w workload, n int) (string, string) {
	return fmt.Sprintf("%s%d begin -->", markerPrefix(w), n), fmt.Sprintf("%s%d end -->", markerPrefix(w), n)
}

// updateBenchmarks writes table as the block of w and N in the harness's
// section of path, creating the section (after the first one, "Machine")
// if needed. A new block goes before w's block of a larger N, else at the
// end of the section.
func updateBenchmarks(path string, w workload, n int, table string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(raw)
	begin, end := blockMarkers(w, n)
	block := begin + "\n" + table + end + "\n"
	if i := strings.Index(doc, begin); i >= 0 {
		j := strings.Index(doc[i:], end)
		if j < 0 {
			return fmt.Errorf("%s: %q without %q", path, begin, end)
		}
		j += i + len(end)
		if j < len(doc) && doc[j] == '\n' {
			j++
		}
		return os.WriteFile(path, []byte(doc[:i]+block+doc[j:]), 0o644)
	}
	if !strings.Contains(doc, sectionTitle) {
		section := sectionTitle + "\n\n" + sectionIntro + "\n"
		// After the first level-2 section (the machine), else at the end.
		if first := strings.Index(doc, "\n## "); first >= 0 {
			if second := strings.Index(doc[first+1:], "\n## "); second >= 0 {
				at := first + 1 + second + 1
				doc = doc[:at] + section + doc[at:]
			} else {
				doc = strings.TrimRight(doc, "\n") + "\n\n" + section
			}
		} else {
			doc = strings.TrimRight(doc, "\n") + "\n\n" + section
		}
	}
	// Inside the section: before the block of a larger N, else at its end.
	start := strings.Index(doc, sectionTitle)
	stop := len(doc)
	if k := strings.Index(doc[start+len(sectionTitle):], "\n## "); k >= 0 {
		stop = start + len(sectionTitle) + k + 1
	}
	at := stop
	for k := start; ; {
		m := strings.Index(doc[k:stop], markerPrefix(w))
		if m < 0 {
			break
		}
		var other int
		if _, err := fmt.Sscanf(doc[k+m+len(markerPrefix(w)):], "%d begin -->", &other); err == nil && other > n {
			at = k + m
			break
		}
		k += m + 1
	}
	sepBefore := ""
	if at == stop && !strings.HasSuffix(doc[:at], "\n\n") {
		sepBefore = "\n"
	}
	sepAfter := ""
	if at < len(doc) {
		sepAfter = "\n"
	}
	doc = doc[:at] + sepBefore + block + sepAfter + doc[at:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
