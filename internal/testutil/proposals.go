package testutil

import (
	"fmt"
	"strings"
)

// ProposalCase is a config in use and a proposed config that reads the
// watched objects otherwise (fields the one in use never reads, another
// index, selector or resource): the reproductions of issue 31's first
// item. Each is judged by a runner (the admission path with pruned live
// stores, the controller against a real API server) and must get the
// verdict of a full render of the proposed config over the whole objects.
type ProposalCase struct {
	// Name says what the proposed config reads and how the verdict went
	// wrong when it was judged over the stores of the config in use.
	Name string
	// Live and Proposed are the configs' specs; Config makes documents
	// of them.
	Live, Proposed string
	// Objects are the cluster's objects (YAML), in namespace
	// ProposalNamespace; a Service's status is set through its status
	// subresource.
	Objects []string
	// Allowed is the full computation's verdict on Proposed over Objects;
	// Phase the phase that denies it.
	Allowed bool
	Phase   string
}

// ProposalNamespace is the namespace of every ProposalCase object.
const ProposalNamespace = "judge"

// proposalHead is the start of every case's haproxy.cfg.
const proposalHead = `global
        maxconn 100
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend http
        bind 127.0.0.1:18080`

// ProposalSpec is a spec watching what watch says (watchedResources'
// entries, YAML flow maps one a line) with the template head + body.
func ProposalSpec(watch, body string) string {
	return `watchedResources:
    ` + strings.ReplaceAll(strings.TrimSpace(watch), "\n", "\n    ") + `
  haproxyConfig:
    template: |
      ` + proposalHead + `
      ` + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n      ") + "\n"
}

// The watches and bodies the cases combine.
const (
	cmsWatch        = `cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name]}`
	cmsByNameWatch  = `cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.name]}`
	cmsPickedWatch  = `cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name], labelSelector: {matchLabels: {pick: "yes"}}}`
	servicesWatch   = `services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}`
	cmsBackends     = "{{- range $cm := .resources.cms.List }}\nbackend cm_{{ $cm.metadata.name }}\n  http-request return status 200\n{{- end }}"
	servicesBackend = "{{- range $svc := .resources.services.List }}\nbackend svc_{{ $svc.metadata.name }}\n  http-request return status 200\n{{- end }}"
)

// cmsWith is a body with one backend per ConfigMap holding line.
func cmsWith(line string) string {
	return "{{- range $cm := .resources.cms.List }}\nbackend cm_{{ $cm.metadata.name }}\n  " + line + "\n  http-request return status 200\n{{- end }}"
}

// servicesWith is a body with one backend per Service holding line.
func servicesWith(line string) string {
	return "{{- range $svc := .resources.services.List }}\nbackend svc_{{ $svc.metadata.name }}\n  " + line + "\n  http-request return status 200\n{{- end }}"
}

// configMap is ConfigMap a holding v as data u, annotation t and label t
// (and label pick=yes).
func configMap(v string) string {
	return fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %s, labels: {t: %q, pick: "yes"}, annotations: {t: %q}}, data: {u: %q}}`,
		ProposalNamespace, v, v, v)
}

// service is Service s, its load balancer's hostname h.
func service(h string) string {
	return fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: s, namespace: %s}, spec: {type: LoadBalancer, ports: [{port: 80}]}, status: {loadBalancer: {ingress: [{hostname: %q}]}}}`,
		ProposalNamespace, h)
}

// The values the cases put where the proposed configs read them: a valid
// and an invalid HAProxy timeout ("5x" is a valid label value and
// host name, not a timeout).
const (
	goodTimeout = "5s"
	badTimeout  = "5x"
)

// ProposalCases are the reproductions, each as a false allow (the
// proposed config breaks over the objects, but not over what the config
// in use keeps of them) and a false deny (a valid value the proposed
// config needs was missing: "<no value>", a missing field or an empty
// store).
func ProposalCases() []ProposalCase {
	cms, cm := ProposalSpec(cmsWatch, cmsBackends), func(v string) []string { return []string{configMap(v)} }
	svcs := func(h string) []string { return []string{configMap(goodTimeout), service(h)} }
	liveWithServices := ProposalSpec(cmsWatch+"\n"+servicesWatch, cmsBackends+"\n"+servicesBackend)
	requireValue := func(expr, what string) string {
		return "{{- $t := " + expr + " }}{{ if not $t }}{{ fail \"" + what + " is required\" }}{{ end }}\n  timeout server {{ $t }}"
	}
	return []ProposalCase{
		{Name: "a new data read denies a bad value", Live: cms, Proposed: ProposalSpec(cmsWatch, cmsWith("timeout server {{ $cm.data.u }}")),
			Objects: cm(badTimeout), Phase: "semantic"},
		{Name: "a new data read allows a good value (false deny)", Live: cms, Proposed: ProposalSpec(cmsWatch, cmsWith("timeout server {{ $cm.data.u }}")),
			Objects: cm(goodTimeout), Allowed: true},
		{Name: "a new optional data read denies a bad value (false allow)", Live: cms, Proposed: ProposalSpec(cmsWatch, cmsWith("{{- with $cm.data }}\n  timeout server {{ .u }}{{ end }}")),
			Objects: cm(badTimeout), Phase: "semantic"},
		{Name: "an annotation through default denies a bad value (false allow)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith(`timeout server {{ index (default dict $cm.metadata.annotations) "t" | default "1s" }}`)),
			Objects:  cm(badTimeout), Phase: "semantic"},
		{Name: "an annotation through default allows a good value (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith(requireValue(`index (default dict $cm.metadata.annotations) "t" | default ""`, "annotation t"))),
			Objects:  cm(goodTimeout), Allowed: true},
		{Name: "a label through dig denies a bad value (false allow)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith(`timeout server {{ dig "metadata" "labels" "t" "1s" $cm }}`)),
			Objects:  cm(badTimeout), Phase: "semantic"},
		{Name: "a label through dig allows a good value (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith(requireValue(`dig "metadata" "labels" "t" "" $cm`, "label t"))),
			Objects:  cm(goodTimeout), Allowed: true},
		{Name: "a Service's status.loadBalancer denies a bad value (false allow)", Live: liveWithServices,
			Proposed: ProposalSpec(cmsWatch+"\n"+servicesWatch, cmsBackends+"\n"+servicesWith(`{{- range dig "status" "loadBalancer" "ingress" list $svc }}`+"\n  timeout server {{ .hostname }}{{ end }}")),
			Objects:  svcs(badTimeout), Phase: "semantic"},
		{Name: "a Service's status.loadBalancer allows a good value (false deny)", Live: liveWithServices,
			Proposed: ProposalSpec(cmsWatch+"\n"+servicesWatch, cmsBackends+"\n"+servicesWith(`timeout server {{ (index $svc.status.loadBalancer.ingress 0).hostname }}`)),
			Objects:  svcs(goodTimeout), Allowed: true},
		{Name: "toJson of a whole object denies a bad value (false allow)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith("{{- with (fromJson (toJson $cm)).data }}\n  timeout server {{ .u }}{{ end }}")),
			Objects:  cm(badTimeout), Phase: "semantic"},
		{Name: "toJson of a whole object allows a good value (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsWatch, cmsWith(requireValue(`dig "data" "u" "" (fromJson (toJson $cm))`, "data u"))),
			Objects:  cm(goodTimeout), Allowed: true},
		{Name: "a new indexBy denies a bad value (false allow)", Live: cms, Proposed: ProposalSpec(cmsByNameWatch, cmsWith("timeout server {{ $cm.metadata.name }}")),
			Objects: cm(goodTimeout), Phase: "semantic"},
		{Name: "a new indexBy allows what it needs (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsByNameWatch, `{{- if not (.resources.cms.Get "a") }}{{ fail "ConfigMap a is required" }}{{ end }}`+"\n"+cmsBackends),
			Objects:  cm(goodTimeout), Allowed: true},
		{Name: "a new label selector denies a bad value (false allow)", Live: cms, Proposed: ProposalSpec(cmsPickedWatch, cmsWith("timeout server {{ $cm.metadata.name }}")),
			Objects: cm(goodTimeout), Phase: "semantic"},
		{Name: "a new label selector allows what it needs (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsPickedWatch, `{{- if not (.resources.cms.Get "`+ProposalNamespace+`" "a") }}{{ fail "ConfigMap a is required" }}{{ end }}`+"\n"+cmsBackends),
			Objects:  cm(goodTimeout), Allowed: true},
		{Name: "a new resource denies a bad value (false allow)", Live: cms,
			Proposed: ProposalSpec(cmsWatch+"\n"+servicesWatch, cmsBackends+"\n"+servicesWith("timeout server {{ $svc.metadata.name }}")),
			Objects:  svcs(goodTimeout), Phase: "semantic"},
		{Name: "a new resource allows what it needs (false deny)", Live: cms,
			Proposed: ProposalSpec(cmsWatch+"\n"+servicesWatch, `{{- if not (.resources.services.Get "`+ProposalNamespace+`" "s") }}{{ fail "Service s is required" }}{{ end }}`+"\n"+cmsBackends),
			Objects:  svcs(goodTimeout), Allowed: true},
	}
}

// ProposalConfig is an HAProxyTemplateConfig document of spec.
func ProposalConfig(namespace, name, spec string) string {
	return fmt.Sprintf("apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nmetadata: {name: %s, namespace: %s}\nspec:\n  %s", name, namespace, spec)
}
