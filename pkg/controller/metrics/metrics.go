package controller

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// metrics are the controller's Prometheus metrics, on their own registry.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	validation *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	phases     *prometheus.HistogramVec
	testHits   prometheus.Counter
	alike      prometheus.Counter
	reloads    *prometheus.CounterVec
	ready      prometheus.Gauge

	liveChecks   *prometheus.CounterVec
	liveValid    prometheus.Gauge
	liveFailures prometheus.Gauge
	warned       *prometheus.CounterVec
	overruled    *prometheus.CounterVec
	liveDuration prometheus.Histogram
	// liveRoundsDeferred counts the quiet periods a due live round waited
	// for admissions being checked (debouncer.busy).
	liveRoundsDeferred prometheus.Counter
	// liveAlike counts the informer updates stored without a live round:
	// they change no field the templates read (alike.go).
	liveAlike       prometheus.Counter
	publishes       *prometheus.CounterVec
	reloadsHAProxy  *prometheus.CounterVec
	reloadDuration  prometheus.Histogram
	runtimeApplies  *prometheus.CounterVec
	reloadsAvoided  prometheus.Counter
	runtimeChecks   *prometheus.CounterVec
	runtimeMismatch *prometheus.CounterVec
	changeToServed  *prometheus.HistogramVec
	buildInfo       *prometheus.GaugeVec
	versionSkew     prometheus.Gauge

	caches cacheMetrics
}

// cacheMetrics count what the caches of the admission path answered (see
// docs/caches.md), from each admission's report.
type cacheMetrics struct {
	reused         prometheus.Counter
	checkHits      prometheus.Counter
	semanticReused prometheus.Counter
}

func newCacheMetrics() cacheMetrics {
	return cacheMetrics{
		reused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_admission_reused_total",
			Help: "Admissions answered with the decision of an identical request against the same live state (decided moments before, or at the same time).",
		}),
		checkHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_check_cache_hits_total",
			Help: "Admissions whose check phases' outcome came from the check cache (an equal bundle checked before).",
		}),
		semanticReused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_check_semantic_reused_total",
			Help: "Admissions whose haproxy -c run was reused from an accepted bundle that differs only in maps HAProxy reads as plain strings (the map-only shortcut).",
		}),
	}
}

func (cm cacheMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{cm.reused, cm.checkHits, cm.semanticReused}
}

// watchParseCache exports the counters of checker's per-section parse
// cache (shared by every checker Allowing derives from it).
func (m *metrics) watchParseCache(checker *haproxy.Checker) {
	stat := func(f func(haproxy.ParseCacheStats) float64) func() float64 {
		return func() float64 { return f(checker.ParseCacheStats()) }
	}
	m.reg.MustRegister(
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

func newMetrics(certNotAfter func() time.Time) *metrics {
	m := &metrics{
		reg:    prometheus.NewRegistry(),
		caches: newCacheMetrics(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_admission_requests_total",
			Help: "Admission requests to /validate by GVK and result (allowed, denied, invalid, error).",
		}, []string{"gvk", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_admission_duration_seconds",
			Help:    "Time to answer an admission request, by the phase that denied it (none when admitted).",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		validation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_admission_validation_duration_seconds",
			Help:    "Time of the dry run (overlay, render, check, tests) by the phase that denied (none when admitted).",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_check_phase_duration_seconds",
			Help:    "Time of each render and check phase of a dry run; phase=semantic is the haproxy -c run.",
			Buckets: admissionBuckets,
		}, []string{"phase"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_admission_in_flight",
			Help: "Admission requests being handled.",
		}),
		testHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_test_cache_hits_total",
			Help: "Admissions whose embedded test results came from the test cache.",
		}),
		alike: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_admission_renders_alike_total",
			Help: "Changes admitted without a check because they alter no field the templates read (e.g. labels no template reads).",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_config_reloads_total",
			Help: "HAProxyTemplateConfig loads by result (applied, invalid, error).",
		}, []string{"result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_ready",
			Help: "1 when the stores synced and a certificate is loaded, else 0.",
		}),
		liveChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_live_checks_total",
			Help: "Renders and checks of the live configuration (the actual stores) by result (valid, invalid).",
		}, []string{"result"}),
		liveValid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_live_config_valid",
			Help: "1 when the last render of the live configuration passed every check, 0 when it failed (the last good one keeps serving).",
		}),
		liveFailures: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "htc_live_failures",
			Help: "Failures found in the current resources (the baseline admissions are judged against; see the config's status.failures).",
		}),
		warned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_admission_warned_total",
			Help: "Changes admitted with a warning although they introduce a failure (validationAction: Warn), by GVK.",
		}, []string{"gvk"}),
		overruled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_check_findings_overruled_total",
			Help: "Syntax and schema findings haproxy -c did not confirm (they became warnings), by phase.",
		}, []string{"phase"}),
		liveDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "htc_live_check_duration_seconds",
			Help:    "Time to render and check the live configuration, embedded tests included.",
			Buckets: admissionBuckets,
		}),
		liveRoundsDeferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_live_rounds_deferred_total",
			Help: "Quiet periods a due live round waited because admissions were being checked (they get the CPU first; the maximum delay still bounds the wait).",
		}),
		liveAlike: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_live_updates_alike_total",
			Help: "Updates of watched objects stored without a live round: they change no field the templates read (the controller's own status writes, mostly), so the live configuration renders as it did.",
		}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_publish_total",
			Help: "Writes of a checked configuration to the output directory by result (written, unchanged, error).",
		}, []string{"result"}),
		reloadsHAProxy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_haproxy_reloads_total",
			Help: "HAProxy reloads through the master socket by result (success, failed: HAProxy refused, error: not reached, skipped: nothing changed) and reason (unknown: what HAProxy runs is not known, structure: haproxy.cfg changed beyond server lines, servers: a server change the runtime API cannot make, files: a file that is not a map or certificate, runtime-failed, mismatch: the run-time comparison found a difference, runtime-off; unchanged with skipped).",
		}, []string{"result", "reason"}),
		runtimeApplies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_haproxy_runtime_applies_total",
			Help: "Changes applied through HAProxy's runtime API instead of a reload, by kind (server, map, cert; session: the runtime API could not be reached; show: a question asked before any change failed) and result (applied, failed: the round reloaded instead).",
		}, []string{"kind", "result"}),
		reloadsAvoided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_haproxy_reloads_avoided_total",
			Help: "Rounds that changed the published files and were applied through the runtime API, without a reload.",
		}),
		runtimeChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_runtime_checks_total",
			Help: "Comparisons of what HAProxy runs (show servers state, show map, show ssl cert) with the files, by result (agreed, mismatch, error; stale: a round changed what HAProxy runs while it was read, the check runs again).",
		}, []string{"result"}),
		runtimeMismatch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "htc_runtime_mismatch_total",
			Help: "Differences found between what HAProxy runs and the files, by kind (server, map, cert); each comparison that finds one reloads HAProxy.",
		}, []string{"kind"}),
		changeToServed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "htc_live_change_to_served_seconds",
			Help:    "Time from the first change of a live round (a watched object or the config) until HAProxy runs its result, by how it got there (runtime, reload).",
			Buckets: admissionBuckets,
		}, []string{"via"}),
		reloadDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "htc_haproxy_reload_duration_seconds",
			Help:    "Time from asking HAProxy to reload until the new worker was seen (or the failure).",
			Buckets: admissionBuckets,
		}),
	}
	m.buildInfo, m.versionSkew = newBuildMetrics()
	m.reg.MustRegister(m.requests, m.duration, m.validation, m.phases, m.inFlight, m.testHits, m.alike, m.reloads, m.ready, certExpiry(certNotAfter),
		m.liveChecks, m.liveValid, m.liveFailures, m.warned, m.overruled, m.liveDuration, m.liveRoundsDeferred, m.liveAlike, m.publishes, m.reloadsHAProxy, m.reloadDuration,
		m.runtimeApplies, m.reloadsAvoided, m.runtimeChecks, m.runtimeMismatch, m.changeToServed,
		m.buildInfo, m.versionSkew,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.caches.collectors()...)
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

// setBuild sets htc_build_info: one series, of this binary and the
// checker's HAProxy version ("unknown" when it could not be read).
func (m *metrics) setBuild(b BuildInfo, haproxyVersion string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(orString(b.Version, "dev"), orString(b.Revision, "unknown"), orString(b.GoVersion, runtime.Version()),
		orString(haproxyVersion, "unknown")).Set(1)
}

// observer adapts the metrics to webhook.Observer.
func (m *metrics) observer() webhook.Observer {
	return webhook.ObserverFuncs{
		OnInFlight: func(d int) { m.inFlight.Add(float64(d)) },
		OnObserve: func(o webhook.Outcome) {
			gvk := o.GVK
			if gvk == "" {
				gvk = "unknown"
			}
			m.requests.WithLabelValues(gvk, string(o.Result)).Inc()
			m.duration.WithLabelValues(phaseLabel(o.Phase)).Observe(o.Duration.Seconds())
		},
	}
}

func phaseLabel(p string) string {
	if p == "" {
		return "none"
	}
	return p
}
