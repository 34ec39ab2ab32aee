// Package controller wires htc together when it runs against a cluster:
//
//	HAProxyTemplateConfig (informer, one object by namespace/name)
//	  → config.FromUnstructured → validation.Validate (a bad config is logged;
//	    the last good one keeps serving)
//	  → dryrun.NewPipeline (templates, checker, tests)
//	  → one dynamic informer per watched resource (its labelSelector applied)
//	    feeding a store.Store; unchanged resourceVersions are skipped
//	  → after every informer synced: the DryRunValidator's State is swapped,
//	    the embedded tests are warmed into the test cache, and the webhook
//	    Registry is replaced with the validators of webhook.Rules (watched
//	    resources with webhookValidation: true, plus HAProxyTemplateConfig).
//
// Every HAProxyTemplateConfig admitted through the webhook (CREATE, UPDATE;
// any namespace/name) is decoded, validated (denied with its field errors),
// rendered over the actual stores (stores it newly watches are empty),
// checked, and its embedded tests run.
//
// Informer updates that keep an object's resourceVersion (resyncs) are
// skipped; a config update that keeps the spec (metadata, status) does not
// reload anything.
//
// A change of the config reconfigures the controller without a restart:
// informers whose (resource, labelSelector, indexBy) did not change keep
// their store, new ones are started and waited for, removed ones stopped.
//
// Readiness: the webhook listens from the start, but until the stores of the
// first good config synced and a serving certificate is loaded, /readyz on
// the health address answers 503 and every admission request is denied with
// "htc is starting: stores not synced yet" (failing closed, like the
// webhook's failurePolicy: Fail would). /healthz answers 200 while the
// process runs.
//
// Metrics (own registry, served on Options.MetricsAddr at /metrics):
//
//	htc_admission_requests_total{gvk,result}           counter
//	htc_admission_duration_seconds{phase}              histogram, whole request;
//	                                                   phase is the denying phase,
//	                                                   "none" when admitted
//	htc_admission_validation_duration_seconds{phase}   histogram, the dry-run only
//	htc_admission_in_flight                            gauge
//	htc_test_cache_hits_total                          counter, admissions whose embedded
//	                                                   test results came from the cache
//	htc_webhook_certificate_expiry_seconds             gauge, seconds until NotAfter
//	htc_config_reloads_total{result}                   counter
//	htc_ready                                          gauge, 1 when serving
//
// The duration of `haproxy -c` alone is not exported: the dry-run pipeline
// (dryrun.ProposalValidator) does not expose the checker's per-phase
// durations to its caller.
package controller
