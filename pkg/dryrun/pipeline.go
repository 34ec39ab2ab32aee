package dryrun

import (
	"context"
	"fmt"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// DefaultProposalTimeout bounds render + check of one proposal.
const DefaultProposalTimeout = 30 * time.Second

// Pipeline is everything derived from one HAProxyTemplateConfig: the parsed
// templates, the proposal validator and the embedded test runner. It is
// immutable once built; a config change builds a new Pipeline.
type Pipeline struct {
	// Config is the configuration the pipeline was built from.
	Config *config.HAProxyTemplateConfig
	// Engine renders the config's templates.
	Engine *render.Engine
	// Proposal renders and checks a set of stores.
	Proposal *ProposalValidator
	// Tests runs the config's embedded validation tests.
	Tests *TestRunner
	// Hash identifies the config's spec (embedded test results are cached by it).
	Hash string
}

// NewPipeline parses cfg's templates and wires them to checker. cfg should
// have passed validation.Validate.
func NewPipeline(cfg *config.HAProxyTemplateConfig, checker *haproxy.Checker, tempDir string) (*Pipeline, error) {
	engine, err := render.New(&cfg.Spec)
	if err != nil {
		return nil, fmt.Errorf("parsing templates of %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	return &Pipeline{
		Config:   cfg,
		Engine:   engine,
		Proposal: &ProposalValidator{Engine: engine, Checker: checker, TempDir: tempDir},
		Tests:    NewTestRunner(&cfg.Spec, engine, checker),
		Hash:     cfg.Spec.Hash(),
	}, nil
}

// ProposalValidator renders a set of stores into a bundle in a fresh private
// directory and checks it: the render-validate part of a dry run.
type ProposalValidator struct {
	// Engine renders the templates.
	Engine *render.Engine
	// Checker checks the rendered bundle.
	Checker *haproxy.Checker
	// TempDir is the parent of the per-proposal directories ("" = os.TempDir()).
	TempDir string
	// Timeout bounds one Validate call; zero means DefaultProposalTimeout.
	Timeout time.Duration
}

// ProposalResult is what Validate learned about a proposal.
type ProposalResult struct {
	// Bundle is the rendered configuration (nil when rendering failed). Its
	// BaseDir no longer exists once Validate returns.
	Bundle *bundle.Bundle
	// Warnings are HAProxy's warnings, simplified.
	Warnings []string
	// Durations are the times of the phases that ran (render, policy,
	// syntax, schema, semantic), also when one failed.
	Durations map[phase.Phase]time.Duration
}

// Validate renders stores and checks the bundle. A failure is a
// *phase.Error naming the phase (render, policy, syntax, schema, semantic);
// a timeout wraps context.DeadlineExceeded. The result is never nil: on
// failure it carries the durations of the phases that ran.
func (p *ProposalValidator) Validate(ctx context.Context, stores store.Set) (*ProposalResult, error) {
	out := &ProposalResult{Durations: map[phase.Phase]time.Duration{}}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultProposalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	ws, err := haproxy.NewWorkspace(p.TempDir)
	if err != nil {
		return out, err
	}
	defer ws.Remove()

	start := time.Now()
	bdl, err := p.Engine.Render(ctx, render.Input{Stores: stores, BaseDir: ws.Dir()})
	out.Durations[phase.Render] = time.Since(start)
	if err != nil {
		return out, err
	}
	out.Bundle = bdl
	res, err := p.Checker.Check(ctx, bdl)
	if res != nil {
		for ph, d := range res.Durations {
			out.Durations[ph] = d
		}
		out.Warnings = res.Warnings
	}
	return out, err
}
