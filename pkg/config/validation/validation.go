// Package validation checks an HAProxyTemplateConfig before it is used:
// required fields, index expressions, label and field selectors, that every
// template parses, and that embedded tests are well formed. Every problem is reported
// with the field path it concerns (spec.watchedResources[ingresses].indexBy[1]).
//
// It is a sub-package of config because it needs the template engine and the
// store's index parser, both of which import config.
package validation

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// Validate returns every problem of cfg, or nil. Use ErrorList.ToAggregate()
// for a single error.
func Validate(cfg *config.HAProxyTemplateConfig) field.ErrorList {
	errs, _ := ValidateEngine(cfg, Memo{})
	return errs
}

// ValidateEngine is Validate, and also returns the render engine it
// built from cfg's templates to check them (memo.Templates.New(&cfg.Spec),
// which takes a template set compiled before from memo.Templates; the
// engine is nil when validation did not get that far or the templates
// failed), so that a caller building a pipeline need not parse and scan
// them again. The assertions' patterns are parsed only when
// memo.Patterns does not hold them.
func ValidateEngine(cfg *config.HAProxyTemplateConfig, memo Memo) (field.ErrorList, *render.Engine) {
	spec := &cfg.Spec
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateWatched(spec, specPath.Child("watchedResources"))...)
	terrs, engine := validateTemplates(spec, specPath, memo.Templates)
	errs = append(errs, terrs...)
	errs = append(errs, validateTests(spec, specPath.Child("validationTests"), memo.Patterns)...)
	errs = append(errs, validateAllowed(spec.AllowedDirectives, specPath.Child("allowedDirectives"))...)
	return errs, engine
}

// resourceName is a lower-case plural resource name such as "ingresses".
var resourceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validateWebhookOperations checks a watched resource's webhookOperations:
// CREATE, UPDATE or DELETE, each once, and only with webhookValidation.
func validateWebhookOperations(w config.WatchedResource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(w.WebhookOperations) > 0 && !w.WebhookValidation {
		errs = append(errs, field.Invalid(p, w.WebhookOperations, "has no effect without webhookValidation: true"))
	}
	seen := map[string]bool{}
	for i, op := range w.WebhookOperations {
		switch {
		case op != "CREATE" && op != "UPDATE" && op != "DELETE":
			errs = append(errs, field.NotSupported(p.Index(i), op, []string{"CREATE", "UPDATE", "DELETE"}))
		case seen[op]:
			errs = append(errs, field.Duplicate(p.Index(i), op))
		}
		seen[op] = true
	}
	return errs
}

func validateWatched(spec *config.HAProxyTemplateConfigSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.WatchedResources) == 0 {
		errs = append(errs, field.Required(p, "at least one watched resource is required"))
	}
	for _, key := range sortedKeys(spec.WatchedResources) {
		w := spec.WatchedResources[key]
		wp := p.Key(key)
		if w.APIVersion == "" {
			errs = append(errs, field.Required(wp.Child("apiVersion"), `e.g. "v1" or "networking.k8s.io/v1"`))
		} else if _, err := schema.ParseGroupVersion(w.APIVersion); err != nil {
			errs = append(errs, field.Invalid(wp.Child("apiVersion"), w.APIVersion, err.Error()))
		}
		switch {
		case w.Resources == "":
			errs = append(errs, field.Required(wp.Child("resources"), `the plural resource name, e.g. "ingresses"`))
		case !resourceName.MatchString(w.Resources):
			errs = append(errs, field.Invalid(wp.Child("resources"), w.Resources, `must be a lower-case plural resource name such as "ingresses"`))
		}
		if len(w.IndexBy) == 0 {
			errs = append(errs, field.Required(wp.Child("indexBy"), `e.g. ["metadata.namespace", "metadata.name"]`))
		}
		for i, expr := range w.IndexBy {
			if _, err := store.ParseIndex([]string{expr}); err != nil {
				errs = append(errs, field.Invalid(wp.Child("indexBy").Index(i), expr, unwrapIndexError(err)))
			}
		}
		if w.ValidationAction != "" && !w.WebhookValidation {
			errs = append(errs, field.Invalid(wp.Child("validationAction"), w.ValidationAction, "has no effect without webhookValidation: true"))
		}
		errs = append(errs, validateWebhookOperations(w, wp.Child("webhookOperations"))...)
		if w.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(w.LabelSelector); err != nil {
				errs = append(errs, field.Invalid(wp.Child("labelSelector"), w.LabelSelector.String(), err.Error()))
			}
		}
		if w.FieldSelector != "" {
			if _, err := fields.ParseSelector(w.FieldSelector); err != nil {
				errs = append(errs, field.Invalid(wp.Child("fieldSelector"), w.FieldSelector, err.Error()))
			}
		}
	}
	return errs
}

// unwrapIndexError drops the "indexBy[0] "expr": " prefix store.ParseIndex
// adds, since the field path already says which expression it is.
func unwrapIndexError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "indexBy[") {
		return msg[i+2:]
	}
	return msg
}

func validateTemplates(spec *config.HAProxyTemplateConfigSpec, p *field.Path, templates *render.Templates) (field.ErrorList, *render.Engine) {
	var errs field.ErrorList
	if strings.TrimSpace(spec.HAProxyConfig.Template) == "" {
		errs = append(errs, field.Required(p.Child("haproxyConfig", "template"), "the haproxy.cfg template must not be empty"))
	}
	for kind, m := range map[string]map[string]config.Template{"maps": spec.Maps, "files": spec.Files, "sslCertificates": spec.SSLCertificates} {
		for _, name := range sortedKeys(m) {
			if msg := badFileName(name); msg != "" {
				errs = append(errs, field.Invalid(p.Child(kind).Key(name), name, msg))
			}
		}
	}
	if len(errs) > 0 {
		return errs, nil
	}
	engine, err := templates.New(spec)
	if err != nil {
		var te *render.TemplateError
		if errors.As(err, &te) {
			return field.ErrorList{field.Invalid(templateField(p, te.Template), fmt.Sprintf("template %s line %d", te.Template, te.Line), te.Message)}, nil
		}
		return field.ErrorList{field.Invalid(p, "templates", err.Error())}, nil
	}
	return nil, engine
}

// badFileName explains why a map, file or certificate name cannot be a file
// inside the bundle, or returns "".
func badFileName(name string) string {
	switch {
	case name == "":
		return "a name is required"
	case strings.HasPrefix(name, "/"):
		return "must be a relative name"
	case path.Clean(name) != name || strings.HasPrefix(name, "../") || name == "..":
		return "must be a clean relative name without '..'"
	case strings.ContainsAny(name, "\\\x00\n\r\t "):
		return "must not contain whitespace, backslashes or control characters"
	}
	return ""
}

// templateField maps a template name of the render engine back to its field.
func templateField(spec *field.Path, name string) *field.Path {
	kind, key, found := strings.Cut(name, ":")
	switch {
	case name == bundle.ConfigFileName:
		return spec.Child("haproxyConfig", "template")
	case name == render.StatusTemplateName:
		return spec.Child("resourceStatus", "template")
	case found && kind == string(bundle.KindMap):
		return spec.Child("maps").Key(key).Child("template")
	case found && kind == string(bundle.KindFile):
		return spec.Child("files").Key(key).Child("template")
	case found && kind == string(bundle.KindCert):
		return spec.Child("sslCertificates").Key(key).Child("template")
	default:
		return spec.Child("templateSnippets").Key(name).Child("template")
	}
}

func validateAllowed(allowed []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	known := policy.DangerousDirectives()
	for i, d := range allowed {
		if dir, ok := strings.CutPrefix(d, policy.AllowPathPrefix); ok {
			if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
				errs = append(errs, field.Invalid(p.Index(i), d, `a "path:" entry needs a clean absolute directory other than "/", e.g. "path:/etc/ssl/certs"`))
			}
			continue
		}
		if !contains(known, d) {
			errs = append(errs, field.NotSupported(p.Index(i), d, append(known, policy.AllowPathPrefix+"<dir>")))
		}
	}
	return errs
}

func validateTests(spec *config.HAProxyTemplateConfigSpec, p *field.Path, patterns *Patterns) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(spec.ValidationTests) {
		t := spec.ValidationTests[name]
		tp := p.Key(name)
		for _, store := range sortedKeys(t.Fixtures) {
			if _, ok := spec.WatchedResources[store]; !ok {
				errs = append(errs, field.NotFound(tp.Child("fixtures").Key(store),
					fmt.Sprintf("%s (not a key of spec.watchedResources)", store)))
			}
		}
		if len(t.Assertions) == 0 {
			errs = append(errs, field.Required(tp.Child("assertions"), "a test needs at least one assertion"))
		}
		for i, a := range t.Assertions {
			errs = append(errs, validateAssertion(spec, a, tp.Child("assertions").Index(i), patterns)...)
		}
	}
	return errs
}

// assertionTypes lists every supported assertion type.
var assertionTypes = []string{
	string(config.AssertHAProxyValid), string(config.AssertContains), string(config.AssertNotContains),
	string(config.AssertEquals), string(config.AssertMatchCount), string(config.AssertMatchOrder),
	string(config.AssertJSONPath), string(config.AssertDeterministic), string(config.AssertRenderingError),
}

func validateAssertion(spec *config.HAProxyTemplateConfigSpec, a config.Assertion, p *field.Path, patterns *Patterns) field.ErrorList {
	var errs field.ErrorList
	if !contains(assertionTypes, string(a.Type)) {
		return field.ErrorList{field.NotSupported(p.Child("type"), string(a.Type), assertionTypes)}
	}
	needPattern := func() {
		if a.Pattern == "" {
			errs = append(errs, field.Required(p.Child("pattern"), fmt.Sprintf("%s needs a regular expression", a.Type)))
		} else if err := patterns.check(a.Pattern); err != nil {
			errs = append(errs, field.Invalid(p.Child("pattern"), a.Pattern, err.Error()))
		}
	}
	switch a.Type {
	case config.AssertContains, config.AssertNotContains, config.AssertRenderingError:
		needPattern()
	case config.AssertMatchCount:
		needPattern()
		if a.Count == nil {
			errs = append(errs, field.Required(p.Child("count"), "match_count needs the expected number of matches"))
		} else if *a.Count < 0 {
			errs = append(errs, field.Invalid(p.Child("count"), *a.Count, "must be zero or more"))
		}
	case config.AssertMatchOrder:
		if len(a.Patterns) < 2 {
			errs = append(errs, field.Required(p.Child("patterns"), "match_order needs at least two regular expressions"))
		}
		for i, pat := range a.Patterns {
			if err := patterns.check(pat); err != nil {
				errs = append(errs, field.Invalid(p.Child("patterns").Index(i), pat, err.Error()))
			}
		}
	case config.AssertEquals:
		if a.Expected == nil {
			errs = append(errs, field.Required(p.Child("expected"), "equals needs the expected content"))
		}
	case config.AssertJSONPath:
		if a.JSONPath == "" {
			errs = append(errs, field.Required(p.Child("jsonpath"), `e.g. "{.resources.ingresses.List[0].metadata.name}"`))
		} else if err := jsonpath.New("assertion").Parse(a.JSONPath); err != nil {
			errs = append(errs, field.Invalid(p.Child("jsonpath"), a.JSONPath, err.Error()))
		}
		if a.Expected == nil {
			errs = append(errs, field.Required(p.Child("expected"), "jsonpath needs the expected value"))
		}
	}
	if a.Target != "" {
		if msg := badTarget(a.Target); msg != "" {
			errs = append(errs, field.Invalid(p.Child("target"), a.Target, msg))
		}
	}
	return errs
}

// badTarget explains why target cannot name a rendered file, or returns "".
// A name the spec does not render statically is accepted when it is a valid
// file name: templates may add it at render time with addFile, and a test
// whose target was not rendered fails.
func badTarget(target string) string {
	if target == bundle.ConfigFileName || target == bundle.StatusTarget {
		return ""
	}
	kind, name, found := strings.Cut(target, ":")
	if !found {
		return `must be "haproxy.cfg", "map:<name>", "file:<name>", "cert:<name>" or "resourceStatus"`
	}
	switch bundle.Kind(kind) {
	case bundle.KindMap, bundle.KindFile, bundle.KindCert:
	default:
		return fmt.Sprintf(`unknown target kind %q: must be "haproxy.cfg", "map:<name>", "file:<name>", "cert:<name>" or "resourceStatus"`, kind)
	}
	if msg := badFileName(name); msg != "" {
		return fmt.Sprintf("%s name %q: %s", kind, name, msg)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
