package testrun

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Status is the outcome of one validation test.
type Status string

// Test outcomes. Only StatusPassed counts as passed.
const (
	// StatusPassed means every assertion held.
	StatusPassed Status = "passed"
	// StatusFailed means an assertion failed or rendering failed unexpectedly.
	StatusFailed Status = "failed"
	// StatusTimedOut means the run's deadline passed while the test ran.
	StatusTimedOut Status = "timed out"
	// StatusNotRun means the run ended (deadline or cancellation) before the test started.
	StatusNotRun Status = "not run"
)

// Result is the outcome of one validation test.
type Result struct {
	// Name is the test's key in spec.validationTests.
	Name string `json:"name"`
	// Description is the test's description.
	Description string `json:"description,omitempty"`
	// Status is the outcome.
	Status Status `json:"status"`
	// RenderError is the simplified rendering error, when rendering failed
	// and the test did not expect it.
	RenderError string `json:"renderError,omitempty"`
	// Failures describe each failed assertion.
	Failures []string `json:"failures,omitempty"`
	// Duration is how long the test took.
	Duration time.Duration `json:"durationNanos"`
}

// Report is the outcome of a test run.
type Report struct {
	// Results, sorted by test name.
	Results []Result `json:"results"`
	// Passed and Total count tests; Total-Passed failed, timed out or did not run.
	Passed int `json:"passed"`
	Total  int `json:"total"`
	// Duration is the wall time of the run.
	Duration time.Duration `json:"durationNanos"`
}

// OK reports whether every test ran and passed.
func (r *Report) OK() bool { return r.Passed == r.Total }

// Err is nil when every test passed, else a *phase.Error with phase tests and
// the reason "N/M validation tests failed: name: problem; …".
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	var parts []string
	for _, res := range r.Results {
		if res.Status == StatusPassed {
			continue
		}
		parts = append(parts, res.Name+": "+res.Problem())
	}
	reason := fmt.Sprintf("%d/%d validation tests failed: %s", r.Total-r.Passed, r.Total, strings.Join(parts, "; "))
	return &phase.Error{Phase: phase.Tests, Reason: reason}
}

// Problem says in one line why a test did not pass ("" when it passed).
func (t Result) Problem() string {
	switch t.Status {
	case StatusPassed:
		return ""
	case StatusTimedOut, StatusNotRun:
		return string(t.Status)
	}
	var p []string
	if t.RenderError != "" {
		p = append(p, "rendering failed: "+t.RenderError)
	}
	p = append(p, t.Failures...)
	return strings.Join(p, ", ")
}

// Options tune a test run.
type Options struct {
	// Workers is the number of tests run at once; 1 (the webhook's setting)
	// runs them sequentially. Zero means 1.
	Workers int
	// Timeout bounds the whole run; tests still running are reported as
	// timed out and tests not started as not run. Zero means 60 s.
	Timeout time.Duration
	// Only restricts the run to these test names (all when empty).
	Only []string
}

// DefaultTimeout bounds a test run when Options.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// timeout is the bound of a run with o: Timeout, or DefaultTimeout.
func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Renderer renders a config's templates (a *render.Engine).
type Renderer interface {
	// Render renders the bundle over in.
	Render(ctx context.Context, in render.Input) (*bundle.Bundle, error)
	// DataContext is the render context as plain data, for jsonpath.
	DataContext(in render.Input) map[string]any
}

// Checker checks a rendered bundle (a *haproxy.Checker); the haproxy_valid
// assertion calls it.
type Checker interface {
	// Check runs every check phase on b.
	Check(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error)
}

// Runner runs a config's embedded validation tests.
type Runner struct {
	spec    *config.HAProxyTemplateConfigSpec
	model   *watched.Model
	engine  Renderer
	checker Checker
	baseDir string
}

// New returns a runner for spec's tests: fixtures fill the stores model
// describes, engine (built from the same spec) renders them for baseDir
// (the directory pathFor resolves against), and checker serves the
// haproxy_valid assertion. A nil checker fails every haproxy_valid
// assertion with a message saying no checker is configured.
func New(spec *config.HAProxyTemplateConfigSpec, model *watched.Model, engine Renderer, checker Checker, baseDir string) *Runner {
	return &Runner{spec: spec, model: model, engine: engine, checker: checker, baseDir: baseDir}
}

// Names returns the test names, sorted.
func (r *Runner) Names() []string {
	names := make([]string, 0, len(r.spec.ValidationTests))
	for n := range r.spec.ValidationTests {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run runs the tests and reports every one of them: a test that timed out or
// never ran is counted as failed, never as passed. An unknown name in
// opts.Only is an error.
func (r *Runner) Run(ctx context.Context, opts Options) (*Report, error) {
	names := r.Names()
	if len(opts.Only) > 0 {
		for _, n := range opts.Only {
			if _, ok := r.spec.ValidationTests[n]; !ok {
				return nil, fmt.Errorf("no validation test named %q (have: %s)", n, strings.Join(names, ", "))
			}
		}
		names = append([]string(nil), opts.Only...)
		sort.Strings(names)
	}
	workers := max(opts.Workers, 1)
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()

	start := time.Now()
	results := make([]Result, len(names))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = r.runOne(ctx, names[i])
			}
		}()
	}
	for i, n := range names {
		if ctx.Err() != nil {
			results[i] = Result{Name: n, Description: r.spec.ValidationTests[n].Description, Status: StatusNotRun}
			continue
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			results[i] = Result{Name: n, Description: r.spec.ValidationTests[n].Description, Status: StatusNotRun}
		}
	}
	close(jobs)
	wg.Wait()

	report := &Report{Results: results, Total: len(results), Duration: time.Since(start)}
	for _, res := range results {
		if res.Status == StatusPassed {
			report.Passed++
		}
	}
	return report, nil
}

// runOne renders one test's fixtures and evaluates its assertions.
func (r *Runner) runOne(ctx context.Context, name string) (res Result) {
	test := r.spec.ValidationTests[name]
	start := time.Now()
	res = Result{Name: name, Description: test.Description}
	defer func() {
		res.Duration = time.Since(start)
		switch {
		case ctx.Err() != nil && res.Status != StatusPassed:
			res.Status = StatusTimedOut
		case res.RenderError != "" || len(res.Failures) > 0:
			res.Status = StatusFailed
		default:
			res.Status = StatusPassed
		}
	}()
	if ctx.Err() != nil {
		return res
	}
	stores, err := fixtureStores(r.model, test)
	if err != nil {
		res.Failures = append(res.Failures, err.Error())
		return res
	}
	// In full: a test renders its own fixtures, never the live state, and
	// no answer of a test rests on work recorded elsewhere.
	in := render.Input{Stores: stores, BaseDir: r.baseDir, Full: true}
	bdl, renderErr := r.engine.Render(ctx, in)
	ev := &evaluator{ctx: ctx, runner: r, in: in, bundle: bdl, renderErr: renderErr}
	expectsRenderError := false
	for _, a := range test.Assertions {
		if a.Type == config.AssertRenderingError {
			expectsRenderError = true
		}
	}
	if renderErr != nil && !expectsRenderError {
		res.RenderError = phase.Reason(renderErr)
		return res
	}
	for _, a := range test.Assertions {
		if msg := ev.evaluate(a); msg != "" {
			res.Failures = append(res.Failures, msg)
		}
	}
	return res
}
