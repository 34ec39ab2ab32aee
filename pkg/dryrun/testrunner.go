package dryrun

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
)

// TestStatus is the outcome of one validation test.
type TestStatus string

// Test outcomes. Only TestPassed counts as passed.
const (
	// TestPassed means every assertion held.
	TestPassed TestStatus = "passed"
	// TestFailed means an assertion failed or rendering failed unexpectedly.
	TestFailed TestStatus = "failed"
	// TestTimedOut means the run's deadline passed while the test ran.
	TestTimedOut TestStatus = "timed out"
	// TestNotRun means the run ended (deadline or cancellation) before the test started.
	TestNotRun TestStatus = "not run"
)

// TestResult is the outcome of one validation test.
type TestResult struct {
	// Name is the test's key in spec.validationTests.
	Name string `json:"name"`
	// Description is the test's description.
	Description string `json:"description,omitempty"`
	// Status is the outcome.
	Status TestStatus `json:"status"`
	// RenderError is the simplified rendering error, when rendering failed
	// and the test did not expect it.
	RenderError string `json:"renderError,omitempty"`
	// Failures describe each failed assertion.
	Failures []string `json:"failures,omitempty"`
	// Duration is how long the test took.
	Duration time.Duration `json:"durationNanos"`
}

// TestReport is the outcome of a test run.
type TestReport struct {
	// Results, sorted by test name.
	Results []TestResult `json:"results"`
	// Passed and Total count tests; Total-Passed failed, timed out or did not run.
	Passed int `json:"passed"`
	Total  int `json:"total"`
	// Duration is the wall time of the run.
	Duration time.Duration `json:"durationNanos"`
}

// OK reports whether every test ran and passed.
func (r *TestReport) OK() bool { return r.Passed == r.Total }

// Err is nil when every test passed, else a *phase.Error with phase tests and
// the reason "N/M validation tests failed: name: problem; …".
func (r *TestReport) Err() error {
	if r.OK() {
		return nil
	}
	var parts []string
	for _, res := range r.Results {
		if res.Status == TestPassed {
			continue
		}
		parts = append(parts, res.Name+": "+res.Problem())
	}
	reason := fmt.Sprintf("%d/%d validation tests failed: %s", r.Total-r.Passed, r.Total, strings.Join(parts, "; "))
	return &phase.Error{Phase: phase.Tests, Reason: reason}
}

// Problem says in one line why a test did not pass ("" when it passed).
func (t TestResult) Problem() string {
	switch t.Status {
	case TestPassed:
		return ""
	case TestTimedOut, TestNotRun:
		return string(t.Status)
	}
	var p []string
	if t.RenderError != "" {
		p = append(p, "rendering failed: "+t.RenderError)
	}
	p = append(p, t.Failures...)
	return strings.Join(p, ", ")
}

// TestOptions tune a test run.
type TestOptions struct {
	// Workers is the number of tests run at once; 1 (the webhook's setting)
	// runs them sequentially. Zero means 1.
	Workers int
	// Timeout bounds the whole run; tests still running are reported as
	// timed out and tests not started as not run. Zero means 60 s.
	Timeout time.Duration
	// Only restricts the run to these test names (all when empty).
	Only []string
	// TempDir is the parent of the per-test bundle directories ("" = os.TempDir()).
	TempDir string
}

// DefaultTestTimeout bounds a test run when TestOptions.Timeout is zero.
const DefaultTestTimeout = 60 * time.Second

// TestRunner runs a config's embedded validation tests.
type TestRunner struct {
	spec    *config.HAProxyTemplateConfigSpec
	engine  *render.Engine
	checker *haproxy.Checker
}

// NewTestRunner returns a runner for spec's tests, rendering with engine
// (built from the same spec) and checking with checker.
func NewTestRunner(spec *config.HAProxyTemplateConfigSpec, engine *render.Engine, checker *haproxy.Checker) *TestRunner {
	return &TestRunner{spec: spec, engine: engine, checker: checker}
}

// Names returns the test names, sorted.
func (r *TestRunner) Names() []string {
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
func (r *TestRunner) Run(ctx context.Context, opts TestOptions) (*TestReport, error) {
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
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	start := time.Now()
	results := make([]TestResult, len(names))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = r.runOne(ctx, names[i], opts.TempDir)
			}
		}()
	}
	for i, n := range names {
		if ctx.Err() != nil {
			results[i] = TestResult{Name: n, Description: r.spec.ValidationTests[n].Description, Status: TestNotRun}
			continue
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			results[i] = TestResult{Name: n, Description: r.spec.ValidationTests[n].Description, Status: TestNotRun}
		}
	}
	close(jobs)
	wg.Wait()

	report := &TestReport{Results: results, Total: len(results), Duration: time.Since(start)}
	for _, res := range results {
		if res.Status == TestPassed {
			report.Passed++
		}
	}
	return report, nil
}

// runOne renders one test's fixtures and evaluates its assertions.
func (r *TestRunner) runOne(ctx context.Context, name, tempDir string) (res TestResult) {
	test := r.spec.ValidationTests[name]
	start := time.Now()
	res = TestResult{Name: name, Description: test.Description}
	defer func() {
		res.Duration = time.Since(start)
		switch {
		case ctx.Err() != nil && res.Status != TestPassed:
			res.Status = TestTimedOut
		case res.RenderError != "" || len(res.Failures) > 0:
			res.Status = TestFailed
		default:
			res.Status = TestPassed
		}
	}()
	if ctx.Err() != nil {
		return res
	}
	stores, err := fixtureStores(r.spec, test)
	if err != nil {
		res.Failures = append(res.Failures, err.Error())
		return res
	}
	ws, err := haproxy.NewWorkspace(tempDir)
	if err != nil {
		res.Failures = append(res.Failures, err.Error())
		return res
	}
	defer ws.Remove()

	in := render.Input{Stores: stores, BaseDir: ws.Dir()}
	bdl, renderErr := r.engine.Render(ctx, in)
	ev := &evaluator{ctx: ctx, runner: r, in: in, bundle: bdl, renderErr: renderErr}
	expectsRenderError := false
	for _, a := range test.Assertions {
		if a.Type == config.AssertRenderingError {
			expectsRenderError = true
		}
	}
	if renderErr != nil && !expectsRenderError {
		res.RenderError = Reason(renderErr)
		return res
	}
	for _, a := range test.Assertions {
		if msg := ev.evaluate(a); msg != "" {
			res.Failures = append(res.Failures, msg)
		}
	}
	return res
}

// Reason is the short, user-readable message of a pipeline error: the
// *phase.Error's Reason when there is one, else the error text.
func Reason(err error) string {
	var pe *phase.Error
	if errors.As(err, &pe) {
		return pe.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}
