package controller

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// checker returns a Checker allowing these directives, shared by every
// pipeline with the same list (so its bound on parallel haproxy runs holds).
func (c *controller) checker(allowed []string) (*haproxy.Checker, error) {
	key := strings.Join(allowed, "\x00")
	c.checkersMu.Lock()
	defer c.checkersMu.Unlock()
	if ch, ok := c.checkers[key]; ok {
		return ch, nil
	}
	ch, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: c.opts.HAProxyPath, AllowedDirectives: allowed})
	if err != nil {
		return nil, err
	}
	c.checkers[key] = ch
	return ch, nil
}

// validators returns the webhook validators of spec's rules.
func (c *controller) validators(spec *config.HAProxyTemplateConfigSpec, log *slog.Logger) map[string]webhook.Validator {
	rules, errs := webhook.Rules(spec, c.mapper)
	for _, err := range errs {
		log.Error("webhook rule not registered", "error", err)
	}
	out := make(map[string]webhook.Validator, len(rules))
	for _, r := range rules {
		if r.StoreKey == "" {
			out[r.GVKString] = webhook.ValidatorFunc(c.validateConfig)
			continue
		}
		out[r.GVKString] = webhook.ValidatorFunc(c.validateResource)
	}
	return out
}

// validateResource is the validator of a watched resource.
func (c *controller) validateResource(ctx context.Context, req dryrun.Request) dryrun.Decision {
	start := time.Now()
	d := c.validator.ValidateDirect(ctx, req)
	c.observe(d, start)
	return d
}

// validateConfig is the validator of HAProxyTemplateConfig objects: the
// proposed config is decoded, validated (denied with its field errors),
// built into a pipeline and rendered over the actual stores, checked and
// its tests run (dryrun.DryRunValidator.ValidateConfig).
func (c *controller) validateConfig(ctx context.Context, req dryrun.Request) dryrun.Decision {
	start := time.Now()
	d := c.decideConfig(ctx, req)
	c.observe(d, start)
	return d
}

const configPhase phase.Phase = "config"

func (c *controller) decideConfig(ctx context.Context, req dryrun.Request) dryrun.Decision {
	if req.Object == nil {
		return dryrun.Decision{Allowed: true}
	}
	cfg, err := config.FromUnstructured(req.Object)
	if err != nil {
		return dryrun.Decision{Reason: err.Error(), Phase: configPhase, Err: err}
	}
	if errs := validation.Validate(cfg); len(errs) > 0 {
		err := errs.ToAggregate()
		return dryrun.Decision{Reason: err.Error(), Phase: configPhase, Err: err}
	}
	checker, err := c.checker(cfg.Spec.AllowedDirectives)
	if err != nil {
		return dryrun.Decision{Reason: "the controller cannot check configurations: " + err.Error(), Phase: phase.Semantic, Err: err}
	}
	pipeline, err := dryrun.NewPipeline(cfg, checker, c.tempDir)
	if err != nil {
		return dryrun.Decision{Reason: err.Error(), Phase: phase.Render, Err: err}
	}
	return c.validator.ValidateConfig(ctx, pipeline)
}

func (c *controller) observe(d dryrun.Decision, start time.Time) {
	c.metrics.validation.WithLabelValues(phaseLabel(string(d.Phase))).Observe(time.Since(start).Seconds())
	if d.TestsCached {
		c.metrics.testHits.Inc()
	}
	for ph, took := range d.Durations {
		c.metrics.phases.WithLabelValues(string(ph)).Observe(took.Seconds())
	}
}
