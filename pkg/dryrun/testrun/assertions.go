package testrun

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/client-go/util/jsonpath"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
)

// evaluator evaluates the assertions of one test against one rendering.
type evaluator struct {
	ctx       context.Context
	runner    *Runner
	in        render.Input
	bundle    *bundle.Bundle
	renderErr error
}

// evaluate returns "" when a holds, else a description of the failure.
func (e *evaluator) evaluate(a config.Assertion) string {
	msg := e.check(a)
	if msg != "" && a.Description != "" {
		return a.Description + " (" + msg + ")"
	}
	return msg
}

func (e *evaluator) check(a config.Assertion) string {
	if a.Type == config.AssertRenderingError {
		if e.renderErr == nil {
			return fmt.Sprintf("expected a rendering error matching /%s/, but rendering succeeded", a.Pattern)
		}
		reason := phase.Reason(e.renderErr)
		if !mustCompile(a.Pattern).MatchString(reason) {
			return fmt.Sprintf("rendering error %q does not match /%s/", reason, a.Pattern)
		}
		return ""
	}
	if e.renderErr != nil {
		return fmt.Sprintf("%s: rendering failed: %s", a.Type, phase.Reason(e.renderErr))
	}
	switch a.Type {
	case config.AssertHAProxyValid:
		if e.runner.checker == nil {
			return "haproxy_valid: no checker is configured (render-only)"
		}
		if _, err := e.runner.checker.Check(e.ctx, e.bundle); err != nil {
			return "haproxy_valid: " + phase.Reason(err)
		}
		return ""
	case config.AssertDeterministic:
		again, err := e.runner.engine.Render(e.ctx, e.in)
		if err != nil {
			return "deterministic: second rendering failed: " + phase.Reason(err)
		}
		if f := firstDifference(e.bundle, again); f != "" {
			return "deterministic: two renderings differ in " + f
		}
		return ""
	case config.AssertJSONPath:
		return e.checkJSONPath(a)
	}

	content, ok := e.bundle.Target(a.Target)
	if !ok {
		return fmt.Sprintf("%s: target %s was not rendered", a.Type, a.Target)
	}
	switch a.Type {
	case config.AssertContains:
		if !mustCompile(a.Pattern).MatchString(content) {
			return fmt.Sprintf("contains: /%s/ not found in %s", a.Pattern, a.Target)
		}
	case config.AssertNotContains:
		if loc := mustCompile(a.Pattern).FindStringIndex(content); loc != nil {
			return fmt.Sprintf("not_contains: /%s/ found in %s at line %d", a.Pattern, a.Target, lineOf(content, loc[0]))
		}
	case config.AssertEquals:
		if content != *a.Expected {
			return fmt.Sprintf("equals: %s differs from the expected content at line %d", a.Target, firstDifferentLine(content, *a.Expected))
		}
	case config.AssertMatchCount:
		if n := len(mustCompile(a.Pattern).FindAllStringIndex(content, -1)); n != *a.Count {
			return fmt.Sprintf("match_count: /%s/ matched %d times in %s, want %d", a.Pattern, n, a.Target, *a.Count)
		}
	case config.AssertMatchOrder:
		pos := 0
		for i, p := range a.Patterns {
			loc := mustCompile(p).FindStringIndex(content[pos:])
			if loc == nil {
				if i == 0 {
					return fmt.Sprintf("match_order: /%s/ not found in %s", p, a.Target)
				}
				return fmt.Sprintf("match_order: /%s/ not found after /%s/ in %s", p, a.Patterns[i-1], a.Target)
			}
			pos += loc[1]
		}
	default:
		return fmt.Sprintf("unknown assertion type %q", a.Type)
	}
	return ""
}

func (e *evaluator) checkJSONPath(a config.Assertion) string {
	jp := jsonpath.New("assertion")
	if err := jp.Parse(a.JSONPath); err != nil {
		return fmt.Sprintf("jsonpath %s: %v", a.JSONPath, err)
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, e.runner.engine.DataContext(e.in)); err != nil {
		return fmt.Sprintf("jsonpath %s: %v", a.JSONPath, err)
	}
	if got := buf.String(); got != *a.Expected {
		return fmt.Sprintf("jsonpath %s = %q, want %q", a.JSONPath, got, *a.Expected)
	}
	return ""
}

// mustCompile compiles a pattern that config validation already compiled.
func mustCompile(p string) *regexp.Regexp {
	re, err := regexp.Compile(p)
	if err != nil {
		return regexp.MustCompile(regexp.QuoteMeta(p))
	}
	return re
}

func lineOf(s string, offset int) int { return strings.Count(s[:offset], "\n") + 1 }

func firstDifferentLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// firstDifference names the first file in which two bundles differ, or "".
func firstDifference(a, b *bundle.Bundle) string {
	fa, fb := a.AllFiles(), b.AllFiles()
	for i := 0; i < len(fa) && i < len(fb); i++ {
		if fa[i].RelPath != fb[i].RelPath {
			return fa[i].RelPath
		}
		if fa[i].Content != fb[i].Content {
			return fmt.Sprintf("%s line %d", fa[i].RelPath, firstDifferentLine(fa[i].Content, fb[i].Content))
		}
	}
	if len(fa) != len(fb) {
		return "the set of files"
	}
	sa, _ := a.Target(bundle.StatusTarget)
	if sb, _ := b.Target(bundle.StatusTarget); sa != sb {
		return fmt.Sprintf("%s line %d", bundle.StatusTarget, firstDifferentLine(sa, sb))
	}
	return ""
}
