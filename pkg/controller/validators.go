package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// rules returns the webhook rules of a config (webhook.Rules); the
// resources that do not resolve are logged and left out.
func (c *controller) rules(model *watched.Model, log *slog.Logger) []webhook.Rule {
	rules, errs := webhook.Rules(model, c.mapper)
	for _, err := range errs {
		log.Error("webhook rule not registered", "error", err)
	}
	return rules
}

// validators returns the webhook validators of a config's rules: the
// admitter's Decide (a config for the HAProxyTemplateConfig rule, a change
// of a watched resource for the others), observed by the metrics, and the
// watched resources' admissions by the shadow checks too. A config is
// judged by the proposed one alone, decoded from its JSON in one pass
// (webhook.ObjectJSON: the handler decodes neither the config it
// replaces nor more of the proposed one than its metadata).
func (c *controller) validators(rules []webhook.Rule) map[string]webhook.Validator {
	out := make(map[string]webhook.Validator, len(rules))
	for _, r := range rules {
		watchedResource := r.StoreKey != ""
		v := c.observed(r.GVKString, c.admitter.Decide, watchedResource)
		if !watchedResource {
			v = webhook.ObjectJSON(v)
		}
		out[r.GVKString] = v
	}
	return out
}

// observed wraps an admission function with the validation metrics, read
// from the decision's report: the decision's latency by phase, the
// per-phase check durations and test cache hits; a change admitted only
// because of validationAction: Warn is counted and recorded as an Event on
// the config. Every admission first interrupts a shadow check in progress
// (it runs when the controller is idle). With sample (the admission of
// watched resources), what it decided through a shortcut is offered to the
// shadow checks, with the generations of the stores before it started (a
// sample of a render the stores changed under is not taken); without, a
// proposed config's render that applied carried records is.
func (c *controller) observed(gvk string, admit func(context.Context, admission.Request) (admission.Decision, admission.Report), sample bool) webhook.Validator {
	return webhook.ValidatorFunc(func(ctx context.Context, req admission.Request) (admission.Decision, admission.Report) {
		c.shadow.Busy()
		start := time.Now()
		before := c.admitter.State()
		var gens map[string]uint64
		if before != nil {
			gens = shadow.Generations(before.Stores)
		}
		d, r := admit(ctx, req)
		switch {
		case sample:
			c.sampleAdmission(before, gens, req, r)
		case r.Proposed != nil && before != nil && before == c.admitter.State():
			c.shadow.ConfigAdmissionRendered(before, gens, req, r)
		}
		c.measured(gvk, req, d, r, time.Since(start))
		return d, r
	})
}

// measured records one admission in the metrics: d, decided in took, and
// its report r.
func (c *controller) measured(gvk string, req admission.Request, d admission.Decision, r admission.Report, took time.Duration) {
	if r.Warned {
		c.warned(gvk, req, d)
	}
	if r.RendersAlike {
		c.metrics.Alike.Inc()
	}
	label := metrics.PhaseLabel(string(d.Phase))
	if r.Busy {
		label = webhook.PhaseBusy
	}
	c.metrics.Validation.WithLabelValues(label).Observe(took.Seconds())
	if r.Reused {
		c.metrics.Caches.Reused.Inc()
	}
	if v := r.Trace; r.Verdict != nil && !r.Reused {
		if v.TestsCached {
			c.metrics.TestHits.Inc()
		}
		if v.CheckCached {
			c.metrics.Caches.CheckHits.Inc()
		}
		if v.SemanticReused {
			c.metrics.Caches.SemanticReused.Inc()
		}
		for ph, took := range v.Durations {
			c.metrics.Phases.WithLabelValues(string(ph)).Observe(took.Seconds())
		}
		for _, o := range v.Overruled {
			c.metrics.Overruled.WithLabelValues(string(o.Phase)).Inc()
		}
	}
}

// warned counts a change admitted with validationAction: Warn and records
// it as a Warning Event on the config in use.
func (c *controller) warned(gvk string, req admission.Request, d admission.Decision) {
	c.metrics.Warned.WithLabelValues(gvk).Inc()
	st := c.admitter.State()
	if st == nil || st.Pipeline == nil || len(d.Warnings) == 0 {
		return
	}
	obj := req.Object
	if obj == nil {
		obj = req.OldObject
	}
	what := gvk
	if obj != nil {
		what = fmt.Sprintf("%s %s", obj.GetKind(), store.NameOf(obj))
	}
	c.status.Event(st.Pipeline.Config, corev1.EventTypeWarning, "AdmittedWithWarning",
		fmt.Sprintf("%s %s was admitted (validationAction: Warn): %s", req.Operation, what, d.Warnings[0]))
}
