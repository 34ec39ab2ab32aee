// Package metrics is the controller's Prometheus metrics, on their own
// registry (Set.Registry, served at /metrics):
//
//   - New builds them all: admission requests and phases, live checks,
//     publishes and reloads of HAProxy, runtime applies and comparisons,
//     the build info and the serving certificate's expiry;
//   - CacheMetrics count what the caches of the admission path answered
//     (docs/caches.md);
//   - Set.Observer adapts them to webhook.Observer, Set.WatchParseCache
//     exports a checker's parse cache, Set.SetBuild sets htc_build_info.
//
// The controller's loops update the fields directly.
package metrics

import (
	"cmp"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// Set is the controller's Prometheus metrics, on their own registry. Each
// field is the metric its Help says (New).
type Set struct {
	Registry   *prometheus.Registry
	Requests   *prometheus.CounterVec
	Duration   *prometheus.HistogramVec
	Validation *prometheus.HistogramVec
	InFlight   prometheus.Gauge
	Phases     *prometheus.HistogramVec
	TestHits   prometheus.Counter
	Alike      prometheus.Counter
	Reloads    *prometheus.CounterVec
	Ready      prometheus.Gauge

	LiveChecks   *prometheus.CounterVec
	LiveValid    prometheus.Gauge
	LiveFailures prometheus.Gauge
	Warned       *prometheus.CounterVec
	Overruled    *prometheus.CounterVec
	LiveDuration prometheus.Histogram
	// liveRoundsDeferred counts the quiet periods a due live round waited
	// for admissions being checked (debouncer.busy).
	LiveRoundsDeferred prometheus.Counter
	// liveAlike counts the informer updates stored without a live round:
	// they change no field the templates read (alike.go).
	LiveAlike       prometheus.Counter
	Publishes       *prometheus.CounterVec
	ReloadsHAProxy  *prometheus.CounterVec
	ReloadDuration  prometheus.Histogram
	RuntimeApplies  *prometheus.CounterVec
	ReloadsAvoided  prometheus.Counter
	RuntimeChecks   *prometheus.CounterVec
	RuntimeMismatch *prometheus.CounterVec
	ChangeToServed  *prometheus.HistogramVec
	BuildInfo       *prometheus.GaugeVec
	VersionSkew     prometheus.Gauge

	Caches CacheMetrics
}

// CacheMetrics count what the caches of the admission path answered (see
// docs/caches.md), from each admission's report.
type CacheMetrics struct {
	Reused         prometheus.Counter
	CheckHits      prometheus.Counter
	SemanticReused prometheus.Counter
}

func newCacheMetrics() CacheMetrics {
	return CacheMetrics{
		Reused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_admission_reused_total",
			Help: "Admissions answered with the decision of an identical request against the same live state (decided moments before, or at the same time).",
		}),
		CheckHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_check_cache_hits_total",
			Help: "Admissions whose check phases' outcome came from the check cache (an equal bundle checked before).",
		}),
		SemanticReused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_check_semantic_reused_total",
			Help: "Admissions whose haproxy -c run was reused from an accepted bundle that differs only in maps HAProxy reads as plain strings (the map-only shortcut).",
		}),
	}
}

func (cm CacheMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{cm.Reused, cm.CheckHits, cm.SemanticReused}
}

// WatchParseCache exports the counters of checker's per-section parse
// cache (shared by every checker Allowing derives from it).
func (m *Set) WatchParseCache(checker *haproxy.Checker) {
	stat := func(f func(haproxy.ParseCacheStats) float64) func() float64 {
		return func() float64 { return f(checker.ParseCacheStats()) }
	}
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "htc_parse_cache_hits_total",
			Help: "Sections of haproxy.cfg whose syntax and schema findings came from the parse cache."},
			stat(func(s haproxy.ParseCacheStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "htc_parse_cache_misses_total",
			Help: "Sections of haproxy.cfg parsed because the parse cache did not have them."},
			stat(func(s haproxy.ParseCacheStats) float64 { return float64(s.Misses) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "htc_parse_cache_entries",
			Help: "Sections the parse cache holds."},
			stat(func(s haproxy.ParseCacheStats) float64 { return float64(s.Entries) })),
	)
}

// admissionBuckets cover a cached-test admission (a few ms) up to the 5 s
// validation deadline.
var admissionBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the metrics registered on a new registry, with
// htc_webhook_certificate_expiry_seconds of certNotAfter.
func New(certNotAfter func() time.Time) *Set {
	m := &Set{
		Registry: prometheus.NewRegistry(),
		Caches:   newCacheMetrics(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_admission_requests_total",
			Help: "Admission requests to /validate by GVK and result (allowed, denied, invalid, error).",
		}, []string{"gvk", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_admission_duration_seconds",
			Help:    "Time to answer an admission request, by the phase that denied it (none when admitted).",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		Validation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_admission_validation_duration_seconds",
			Help:    "Time of the dry run (overlay, render, check, tests) by the phase that denied (none when admitted).",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		Phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_check_phase_duration_seconds",
			Help:    "Time of each render and check phase of a dry run; phase=semantic is the haproxy -c run.",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_admission_in_flight",
			Help: "Admission requests being handled.",
		}),
		TestHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_test_cache_hits_total",
			Help: "Admissions whose embedded test results came from the test cache.",
		}),
		Alike: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_admission_renders_alike_total",
			Help: "Changes admitted without a check because they alter no field the templates read (e.g. labels no template reads).",
		}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_config_reloads_total",
			Help: "HAProxyTemplateConfig loads by result (applied, invalid, error).",
		}, []string{"result"}),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_ready",
			Help: "1 when the stores synced and a certificate is loaded, else 0.",
		}),
		LiveChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_live_checks_total",
			Help: "Renders and checks of the live configuration (the actual stores) by result (valid, invalid).",
		}, []string{"result"}),
		LiveValid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_live_config_valid",
			Help: "1 when the last render of the live configuration passed every check, 0 when it failed (the last good one keeps serving).",
		}),
		LiveFailures: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_live_failures",
			Help: "Failures found in the current resources (the baseline admissions are judged against; see the config's status.failures).",
		}),
		Warned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_admission_warned_total",
			Help: "Changes admitted with a warning although they introduce a failure (validationAction: Warn), by GVK.",
		}, []string{"gvk"}),
		Overruled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_check_findings_overruled_total",
			Help: "Syntax and schema findings haproxy -c did not confirm (they became warnings), by phase.",
		}, []string{"phase"}),
		LiveDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "htc_live_check_duration_seconds",
			Help:    "Time to render and check the live configuration, embedded tests included.",
			Buckets: admissionBuckets,
		}),
		LiveRoundsDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_live_rounds_deferred_total",
			Help: "Quiet periods a due live round waited because admissions were being checked (they get the CPU first; the maximum delay still bounds the wait).",
		}),
		LiveAlike: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_live_updates_alike_total",
			Help: "Updates of watched objects stored without a live round: they change no field the templates read (the controller's own status writes, mostly), so the live configuration renders as it did.",
		}),
		Publishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_publish_total",
			Help: "Writes of a checked configuration to the output directory by result (written, unchanged, error).",
		}, []string{"result"}),
		ReloadsHAProxy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_haproxy_reloads_total",
			Help: "HAProxy reloads through the master socket by result (success, failed: HAProxy refused, error: not reached, skipped: nothing changed) and reason (unknown: what HAProxy runs is not known, structure: haproxy.cfg changed beyond server lines, servers: a server change the runtime API cannot make, files: a file that is not a map or certificate, runtime-failed, mismatch: the run-time comparison found a difference, runtime-off, master-slots: connections to the master CLI ended before their answers; unchanged with skipped).",
		}, []string{"result", "reason"}),
		RuntimeApplies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_haproxy_runtime_applies_total",
			Help: "Changes applied through HAProxy's runtime API instead of a reload, by kind (server, map, cert; session: the runtime API could not be reached; show: a question asked before any change failed) and result (applied, failed: the round reloaded instead).",
		}, []string{"kind", "result"}),
		ReloadsAvoided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_haproxy_reloads_avoided_total",
			Help: "Rounds that changed the published files and were applied through the runtime API, without a reload.",
		}),
		RuntimeChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_runtime_checks_total",
			Help: "Comparisons of what HAProxy runs (show servers state, show map, show ssl cert) with the files, by result (agreed, mismatch, error; stale: a round changed what HAProxy runs while it was read, the check runs again).",
		}, []string{"result"}),
		RuntimeMismatch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_runtime_mismatch_total",
			Help: "Differences found between what HAProxy runs and the files, by kind (server, map, cert); each comparison that finds one reloads HAProxy.",
		}, []string{"kind"}),
		ChangeToServed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_live_change_to_served_seconds",
			Help:    "Time from the first change of a live round (a watched object or the config) until HAProxy runs its result, by how it got there (runtime, reload).",
			Buckets: admissionBuckets,
		}, []string{"via"}),
		ReloadDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "htc_haproxy_reload_duration_seconds",
			Help:    "Time from asking HAProxy to reload until the new worker was seen (or the failure).",
			Buckets: admissionBuckets,
		}),
	}
	m.BuildInfo, m.VersionSkew = newBuildMetrics()
	m.Registry.MustRegister(m.Requests, m.Duration, m.Validation, m.Phases, m.InFlight, m.TestHits, m.Alike, m.Reloads, m.Ready, certExpiry(certNotAfter),
		m.LiveChecks, m.LiveValid, m.LiveFailures, m.Warned, m.Overruled, m.LiveDuration, m.LiveRoundsDeferred, m.LiveAlike, m.Publishes, m.ReloadsHAProxy, m.ReloadDuration,
		m.RuntimeApplies, m.ReloadsAvoided, m.RuntimeChecks, m.RuntimeMismatch, m.ChangeToServed,
		m.BuildInfo, m.VersionSkew,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(m.Caches.collectors()...)
	return m
}

// newBuildMetrics are htc_build_info and htc_haproxy_version_skew.
func newBuildMetrics() (*prometheus.GaugeVec, prometheus.Gauge) {
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "htc_build_info",
		Help: "1, labelled with the htc version, VCS revision and Go version of this binary and the version of the HAProxy that checks (haproxy -v).",
	}, []string{"version", "revision", "goversion", "haproxy_version"})
	versionSkew := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "htc_haproxy_version_skew",
		Help: "1 when the HAProxy reloaded through the master socket runs another version than the HAProxy that checks, else 0 (see the HAProxyVersionSkew condition).",
	})
	return buildInfo, versionSkew
}

// certExpiry is htc_webhook_certificate_expiry_seconds of certNotAfter.
func certExpiry(certNotAfter func() time.Time) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "htc_webhook_certificate_expiry_seconds",
		Help: "Seconds until the serving certificate's NotAfter (0 when none is loaded).",
	}, func() float64 {
		t := certNotAfter()
		if t.IsZero() {
			return 0
		}
		return time.Until(t).Seconds()
	})
}

// SetBuild sets htc_build_info: one series, of this binary's version
// ("dev" when empty), revision ("unknown"), Go version (runtime.Version())
// and the checker's HAProxy version ("unknown" when it could not be read).
func (m *Set) SetBuild(version, revision, goVersion, haproxyVersion string) {
	m.BuildInfo.Reset()
	m.BuildInfo.WithLabelValues(cmp.Or(version, "dev"), cmp.Or(revision, "unknown"), cmp.Or(goVersion, runtime.Version()),
		cmp.Or(haproxyVersion, "unknown")).Set(1)
}

// Observer adapts the metrics to webhook.Observer.
func (m *Set) Observer() webhook.Observer {
	return webhook.ObserverFuncs{
		OnInFlight: func(d int) { m.InFlight.Add(float64(d)) },
		OnObserve: func(o webhook.Outcome) {
			gvk := o.GVK
			if gvk == "" {
				gvk = "unknown"
			}
			m.Requests.WithLabelValues(gvk, string(o.Result)).Inc()
			m.Duration.WithLabelValues(PhaseLabel(o.Phase)).Observe(o.Duration.Seconds())
		},
	}
}

// PhaseLabel is the phase label of phase p ("none" when empty).
func PhaseLabel(p string) string {
	if p == "" {
		return "none"
	}
	return p
}
