package haproxy

import (
	"context"
	stderrors "errors"
	"fmt"
	"sort"
	"strings"

	oaerrors "github.com/go-openapi/errors"
	"github.com/go-openapi/strfmt"
	"github.com/haproxytech/client-native/v5/configuration"
	"github.com/haproxytech/client-native/v5/models"
	parser "github.com/haproxytech/config-parser/v5"
	"github.com/haproxytech/config-parser/v5/types"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// validatable is a client-native model.
type validatable interface {
	Validate(formats strfmt.Registry) error
}

// schemaRun collects the findings of one schema check. It stops when ctx
// ends (err then holds ctx's error).
type schemaRun struct {
	ctx      context.Context
	p        parser.Parser
	idx      *configIndex
	findings []Finding
	err      error
}

// stopped reports whether the run's context has ended, recording its error.
func (r *schemaRun) stopped() bool {
	if r.err == nil {
		r.err = ctxDone(r.ctx)
	}
	return r.err != nil
}

// checkSchema converts the parsed global, defaults, frontend and backend
// sections, and the binds, servers, server templates, ACLs, rules, filters,
// log targets and checks inside them, to client-native models and validates
// them. Objects client-native cannot convert are skipped: HAProxy accepts
// them (config-parser already did), and `haproxy -c` remains the judge.
// listen, resolvers, peers and the other sections have no client-native v5
// model that maps them one to one and are left to the syntax and semantic
// phases. ctx is checked before each section and each server. A panic
// inside client-native is returned as an error.
func checkSchema(ctx context.Context, p parser.Parser, idx *configIndex) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("client-native failed: %v", r)
		}
	}()
	r := &schemaRun{ctx: ctx, p: p, idx: idx}
	r.global()
	for _, name := range r.names(parser.Defaults) {
		if r.stopped() {
			return r.err
		}
		r.defaults(name)
	}
	for _, name := range r.names(parser.Frontends) {
		if r.stopped() {
			return r.err
		}
		r.frontend(name)
	}
	for _, name := range r.names(parser.Backends) {
		if r.stopped() {
			return r.err
		}
		r.backend(name)
	}
	if r.stopped() {
		return r.err
	}
	if len(r.findings) == 0 {
		return nil
	}
	sort.SliceStable(r.findings, func(i, j int) bool { return r.findings[i].Line < r.findings[j].Line })
	return &SchemaError{Findings: r.findings}
}

// names lists the sections of one type, sorted.
func (r *schemaRun) names(sec parser.Section) []string {
	names, err := r.p.SectionsGet(sec)
	if err != nil {
		return nil
	}
	sort.Strings(names)
	return names
}

// global validates the global section.
func (r *schemaRun) global() {
	if g, err := configuration.ParseGlobalSection(r.p); err == nil && g != nil {
		r.validate(r.idx.section("global", "data"), "global", g)
	}
}

// defaults validates one defaults section.
func (r *schemaRun) defaults(name string) {
	d := &models.Defaults{Name: name}
	if configuration.ParseSection(d, parser.Defaults, name, r.p) == nil {
		label := "defaults"
		if !strings.HasPrefix(name, "unnamed_defaults_") {
			label = fmt.Sprintf("defaults '%s'", policy.Shorten(name))
		}
		r.validate(r.idx.section("defaults", name), label, d)
	}
}

// frontend validates one frontend and what it contains.
func (r *schemaRun) frontend(name string) {
	span := r.idx.section("frontend", name)
	label := fmt.Sprintf("frontend '%s'", policy.Shorten(name))
	fe := &models.Frontend{Name: name}
	if configuration.ParseSection(fe, parser.Frontends, name, r.p) == nil {
		r.validate(span, label, fe)
	}
	if binds, err := configuration.ParseBinds("frontend", name, r.p); err == nil {
		for _, b := range binds {
			r.validateAt(r.idx.lineStarting(span, "bind", b.Address+portSuffix(b.Port)), label+" bind", b)
		}
	}
	r.proxyRules(span, label, "frontend", parser.Frontends, name)
	if rules, err := configuration.ParseBackendSwitchingRules(name, r.p); err == nil {
		r.validateList(span, label, "use_backend", rules.Validate)
	}
	if caps, err := configuration.ParseDeclareCaptures(name, r.p); err == nil {
		r.validateList(span, label, "declare", caps.Validate)
	}
}

// backend validates one backend and what it contains.
func (r *schemaRun) backend(name string) {
	span := r.idx.section("backend", name)
	label := fmt.Sprintf("backend '%s'", policy.Shorten(name))
	be := &models.Backend{Name: name}
	if configuration.ParseSection(be, parser.Backends, name, r.p) == nil {
		r.validate(span, label, be)
	}
	r.servers(span, label, name)
	if tmpls, err := configuration.ParseServerTemplates(name, r.p); err == nil {
		for _, t := range tmpls {
			r.validateAt(r.idx.lineStarting(span, "server-template", t.Prefix), fmt.Sprintf("%s server-template '%s'", label, policy.Shorten(t.Prefix)), t)
		}
	}
	r.proxyRules(span, label, "backend", parser.Backends, name)
	if rules, err := configuration.ParseServerSwitchingRules(name, r.p); err == nil {
		r.validateList(span, label, "use-server", rules.Validate)
	}
	if rules, err := configuration.ParseStickRules(name, r.p); err == nil {
		r.validateList(span, label, "stick", rules.Validate)
	}
	if rules, err := configuration.ParseTCPResponseRules(name, r.p); err == nil {
		r.validateList(span, label, "tcp-response", rules.Validate)
	}
	if checks, err := configuration.ParseHTTPChecks("backend", name, r.p); err == nil {
		r.validateList(span, label, "http-check", checks.Validate)
	}
	if checks, err := configuration.ParseTCPChecks("backend", name, r.p); err == nil {
		r.validateList(span, label, "tcp-check", checks.Validate)
	}
}

// servers validates the servers of backend name one by one, as
// configuration.ParseServers would convert them, checking ctx before each.
func (r *schemaRun) servers(span *sectionSpan, label, name string) {
	data, err := r.p.Get(parser.Backends, name, "server", false)
	if err != nil {
		return
	}
	servers, ok := data.([]types.Server)
	if !ok {
		return
	}
	for _, ondisk := range servers {
		if r.stopped() {
			return
		}
		if s := configuration.ParseServer(ondisk); s != nil {
			r.validateAt(r.idx.lineStarting(span, "server", s.Name), fmt.Sprintf("%s server '%s'", label, policy.Shorten(s.Name)), s)
		}
	}
}

// proxyRules validates what frontends and backends share.
func (r *schemaRun) proxyRules(span *sectionSpan, label, kind string, sec parser.Section, name string) {
	if acls, err := configuration.ParseACLs(sec, name, r.p); err == nil {
		r.validateList(span, label, "acl", acls.Validate)
	}
	if rules, err := configuration.ParseHTTPRequestRules(kind, name, r.p); err == nil {
		r.validateList(span, label, "http-request", rules.Validate)
	}
	if rules, err := configuration.ParseHTTPResponseRules(kind, name, r.p); err == nil {
		r.validateList(span, label, "http-response", rules.Validate)
	}
	if rules, err := configuration.ParseHTTPAfterRules(kind, name, r.p); err == nil {
		r.validateList(span, label, "http-after-response", rules.Validate)
	}
	if rules, err := configuration.ParseHTTPErrorRules(kind, name, r.p); err == nil {
		r.validateList(span, label, "http-error", rules.Validate)
	}
	if rules, err := configuration.ParseTCPRequestRules(kind, name, r.p); err == nil {
		r.validateList(span, label, "tcp-request", rules.Validate)
	}
	if filters, err := configuration.ParseFilters(kind, name, r.p); err == nil {
		r.validateList(span, label, "filter", filters.Validate)
	}
	if logs, err := configuration.ParseLogTargets(kind, name, r.p); err == nil {
		r.validateList(span, label, "log", logs.Validate)
	}
}

// validate validates a section model, reporting at the section header.
func (r *schemaRun) validate(span *sectionSpan, label string, m validatable) {
	line := 0
	if span != nil {
		line = span.start
	}
	r.validateAt(line, label, m)
}

// validateAt validates one model, reporting at line.
func (r *schemaRun) validateAt(line int, label string, m validatable) {
	r.report(line, label, m.Validate(strfmt.Default))
}

// validateList validates a list of models (one keyword), reporting at the
// first line of that keyword in the section.
func (r *schemaRun) validateList(span *sectionSpan, label, keyword string, validate func(strfmt.Registry) error) {
	if err := validate(strfmt.Default); err != nil {
		r.report(r.idx.lineStarting(span, keyword), label+" "+keyword, err)
	}
}

// report turns a validation error into findings.
func (r *schemaRun) report(line int, label string, err error) {
	for _, msg := range flattenValidation(err) {
		r.findings = append(r.findings, Finding{File: bundle.ConfigFileName, Line: line, Message: label + ": " + msg})
	}
}

// flattenValidation lists the leaf messages of a go-openapi validation error.
func flattenValidation(err error) []string {
	if err == nil {
		return nil
	}
	var comp *oaerrors.CompositeError
	if stderrors.As(err, &comp) && len(comp.Errors) > 0 {
		var out []string
		for _, e := range comp.Errors {
			out = append(out, flattenValidation(e)...)
		}
		return out
	}
	msg := strings.ReplaceAll(err.Error(), " in body", "")
	return []string{msg}
}

// portSuffix renders ":port" for a bind port, "" when unset.
func portSuffix(p *int64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf(":%d", *p)
}
