package controller

import (
	"context"
	"log/slog"
	"time"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// validators returns the webhook validators of a config's rules: the
// admitter's Resource for every watched resource admission checks, its
// Config for HAProxyTemplateConfig objects, each observed by the metrics.
func (c *controller) validators(model *watched.Model, log *slog.Logger) map[string]webhook.Validator {
	rules, errs := webhook.Rules(model, c.mapper)
	for _, err := range errs {
		log.Error("webhook rule not registered", "error", err)
	}
	out := make(map[string]webhook.Validator, len(rules))
	for _, r := range rules {
		if r.StoreKey == "" {
			out[r.GVKString] = c.observed(c.admitter.Config)
			continue
		}
		out[r.GVKString] = c.observed(c.admitter.Resource)
	}
	return out
}

// observed wraps an admission function with the validation metrics: the
// decision's latency by phase, the per-phase check durations and test
// cache hits.
func (c *controller) observed(admit func(context.Context, admission.Request) admission.Decision) webhook.Validator {
	return webhook.ValidatorFunc(func(ctx context.Context, req admission.Request) admission.Decision {
		start := time.Now()
		d := admit(ctx, req)
		c.metrics.validation.WithLabelValues(phaseLabel(string(d.Phase))).Observe(time.Since(start).Seconds())
		if v := d.Verdict; v != nil {
			if v.TestsCached {
				c.metrics.testHits.Inc()
			}
			for ph, took := range v.Durations {
				c.metrics.phases.WithLabelValues(string(ph)).Observe(took.Seconds())
			}
		}
		return d
	})
}
