package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
)

// FuzzProposedConfigJudgedAsInFull is the differential test of a
// proposed config's admission: the fuzz input chooses a config in use and
// a proposed one (how each watches ConfigMaps: index, label selector; what
// each reads of them and how: fields, annotations through default, labels
// through dig, data through toJson and fromJson, the count of objects;
// in a timeout HAProxy checks, a comment, or a condition that fails the
// render) and the ConfigMaps in the cluster. The webhook's decision
// (Admitter.Config, over live stores pruned to what the config in use
// reads, listing the rest from the cluster) must be a full render of the
// proposed config over the whole objects, checked: allowed when that
// passes, else denied in the same phase (the reason names the first
// failure of each object, the verdict's all of them). Inputs whose
// config in use fails over the cluster are skipped (the decision is then
// relative to that failure).
//
// make test runs the seed corpus (testdata/fuzz/FuzzProposedConfigJudgedAsInFull:
// the reproductions of issue 31); make fuzz runs the fuzzer.
func FuzzProposedConfigJudgedAsInFull(f *testing.F) {
	env := testEnv(f)
	f.Fuzz(func(t *testing.T, live, proposed, cluster uint32) {
		livePipeline, err := dryrun.Build(fuzzConfig(t, live), env)
		if err != nil {
			t.Skipf("not a configuration: %v", err) // a generator bug shows as no coverage, not a pass
		}
		objs := clusterOf(t, fuzzConfigMaps(cluster))
		a := prunedAdmitter(t, livePipeline, objs)
		if base := a.Baseline(a.State()); len(base.Diagnosis.Failures) > 0 {
			return
		}
		doc := testutil.ProposalConfig("htc-system", "htc", fuzzSpec(proposed))
		p := pipelineFor(t, doc)
		truth := fullVerdict(t, p, objs)
		d := decided(context.Background(), a.Config, configReq(t, doc))
		if d.Allowed != truth.Passed() || string(d.Phase) != string(truth.Phase) {
			t.Fatalf("the admission decided otherwise than a full render over the whole objects:\nadmission: allowed=%v phase=%q reason=%q\nfull:      passed=%v phase=%q reason=%q\nin use:\n%s\nproposed:\n%s\ncluster:\n%s",
				d.Allowed, d.Phase, d.Reason, truth.Passed(), truth.Phase, truth.Reason, fuzzSpec(live), fuzzSpec(proposed), strings.Join(fuzzConfigMaps(cluster), "\n"))
		}
	})
}

// fuzzConfig is the config of word w (see fuzzSpec).
func fuzzConfig(t *testing.T, w uint32) *config.HAProxyTemplateConfig {
	cfg, err := config.Parse([]byte(testutil.ProposalConfig("htc-system", "htc", fuzzSpec(w))))
	if err != nil {
		t.Fatalf("the generator made a config that does not parse: %v\n%s", err, fuzzSpec(w))
	}
	return cfg
}

// fuzzWatches are how a config watches ConfigMaps (2 bits).
var fuzzWatches = []string{
	`cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name]}`,
	`cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.name]}`,
	`cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name], labelSelector: {matchLabels: {pick: "yes"}}}`,
	`cms: {apiVersion: v1, resources: configmaps, indexBy: [data.u]}`,
}

// fuzzReads are what a line reads of ConfigMap $cm (3 bits).
var fuzzReads = []string{
	`$cm.metadata.name`,
	`$cm.data.u`,
	`dig "data" "u" "1s" $cm`,
	`index (default dict $cm.metadata.annotations) "t" | default "1s"`,
	`dig "metadata" "labels" "t" "1s" $cm`,
	`dig "data" "u" "1s" (fromJson (toJson $cm))`,
	`len (toJson $cm)`,
	`len $.resources.cms.List`,
}

// fuzzLine is a line of each ConfigMap's backend holding read r in
// context c (2 bits): none, a timeout HAProxy checks, a comment (only its
// rendering can fail), a condition that fails the render on "5x".
func fuzzLine(c, r uint32) string {
	read := fuzzReads[r]
	switch c {
	case 1:
		return "timeout server {{ " + read + " }}"
	case 2:
		return "# {{ " + read + " }}"
	case 3:
		return `{{- if eq (toString (` + read + `)) "5x" }}{{ fail "a value is 5x" }}{{ end }}`
	}
	return ""
}

// fuzzSpec is the spec of word w: bits 0-1 the watch, then three lines of
// 5 bits each (context, read), then bit 17: the render fails without
// ConfigMap a (Get by the index's keys).
func fuzzSpec(w uint32) string {
	watch := w & 3
	var lines []string
	for i := range 3 {
		x := w >> (2 + 5*i)
		if l := fuzzLine(x&3, (x>>2)&7); l != "" {
			lines = append(lines, l)
		}
	}
	body := "{{- range $cm := .resources.cms.List }}\nbackend cm_{{ $cm.metadata.name }}\n  " + strings.Join(append(lines, "http-request return status 200"), "\n  ") + "\n{{- end }}"
	if w>>17&1 == 1 {
		get := map[uint32]string{0: `"judge" "a"`, 1: `"a"`, 2: `"judge" "a"`, 3: `"5s"`}[watch]
		body = `{{- if not (.resources.cms.Get ` + get + `) }}{{ fail "ConfigMap a is required" }}{{ end }}` + "\n" + body
	}
	return testutil.ProposalSpec(fuzzWatches[watch], body)
}

// fuzzValues are the values a ConfigMap field takes (2 bits; "" is
// absent).
var fuzzValues = []string{"", "5s", "5x", "1"}

// fuzzConfigMaps are the ConfigMaps of word w: three (a, b, c) of 8 bits
// each: present, data u, label t, annotation t (2 bits each), label
// pick=yes.
func fuzzConfigMaps(w uint32) []string {
	var out []string
	for i, name := range []string{"a", "b", "c"} {
		x := w >> (8 * i)
		if x&1 == 0 {
			continue
		}
		u, label, ann := fuzzValues[x>>1&3], fuzzValues[x>>3&3], fuzzValues[x>>5&3]
		var labels, anns, data []string
		if label != "" {
			labels = append(labels, fmt.Sprintf("t: %q", label))
		}
		if x>>7&1 == 1 {
			labels = append(labels, `pick: "yes"`)
		}
		if ann != "" {
			anns = append(anns, fmt.Sprintf("t: %q", ann))
		}
		if u != "" {
			data = append(data, fmt.Sprintf("u: %q", u))
		}
		out = append(out, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s, labels: {%s}, annotations: {%s}}, data: {%s}}",
			name, testutil.ProposalNamespace, strings.Join(labels, ", "), strings.Join(anns, ", "), strings.Join(data, ", ")))
	}
	return out
}
