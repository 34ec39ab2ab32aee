// Package controller wires htc together when it runs against a cluster:
//
//	HAProxyTemplateConfig (informer, one object by namespace/name)
//	  → config.FromUnstructured → dryrun.Build (validation, watched-resource
//	    model, templates, checker, tests; a bad config is logged and the last
//	    good one keeps serving)
//	  → one dynamic informer per watched resource (package informer;
//	    watched.Resource: its labelSelector applied) feeding a
//	    store.Store; unchanged resourceVersions are skipped
//	  → after every informer synced: the embedded tests are warmed into the
//	    test cache, the admission.Admitter's State is swapped, and the webhook
//	    Registry is replaced with the validators of webhook.Rules (watched
//	    resources admission checks, plus HAProxyTemplateConfig).
//
// Its sub-packages, one job each:
//
//	informer      the informers that fill the stores; the prepared watchers
//	              of proposed configs
//	cfgstatus     the config's conditions, failures and Events
//	objstatus     the status documents written to the watched objects
//	metrics       the Prometheus metrics listed below
//	servingcert   the webhook's serving certificate (files or a Secret)
//	registration  the ValidatingWebhookConfiguration's webhooks
//	leader        leader election (the Lease)
//
// The live configuration (live.go) follows every change of a store or the
// config, debounced (Options.Debounce, Options.MaxDelay; debounce.go; a
// due round also waits while admissions are being checked, up to the
// maximum delay, so that it does not take their CPU; an update that
// changes no field the templates read starts none: alike.go; one of an
// object's status only, which package informer tells apart, waits
// StatusDebounce for another change to come with): one round
// at a time checks it over the actual stores on the one check path
// (dryrun.Pipeline.Check: render, check, the cached embedded tests) and
// records the outcome on the config (package cfgstatus; the condition
// types are conditions.go's): condition Valid with the
// simplified reason, an Event on every condition change, a log line and
// metrics. The config's status is written behind the round (cfgstatus's
// writer), never inside it: the round holds the live lock, and a write
// there held up the next change's round. With Options.OutputDir, pipelines render for that directory, and
// a bundle that passed is written there as checked (package publish); with
// Options.MasterSocket, HAProxy then runs it (dataplane.go): through its
// runtime API when package dataplane finds the change can be made there as
// a reload would make it, else by a reload through the master CLI, verified
// (package haproxy/master) and paced (Options.ReloadInterval). A runtime
// command that fails reloads; a reload HAProxy refuses restores the
// previous files; an unreachable socket is retried with back-off; a round
// that changed no file does nothing. That is condition Published (reason
// Reloaded or AppliedAtRuntime). What HAProxy runs is compared with the
// files after Options.RuntimeCheckEvery runtime rounds and when idle
// (condition RuntimeVerified), a difference repaired by a reload; the
// comparison reads HAProxy without holding up rounds (dataplane.go). A
// configuration that fails is never written. The first round of a config
// runs when the config is applied (for the first config, before admissions
// are served).
//
// Every HAProxyTemplateConfig admitted through the webhook (CREATE, UPDATE;
// any namespace/name) is decoded, validated (denied with its field errors),
// rendered over the objects it will render once applied, checked, and its
// embedded tests run: a store in use where it watches the resource the same
// way and keeps every field the proposed config reads, else the store of
// the informer the config will have once applied, which its admission
// starts and waits for until its deadline (package informer, Prepared:
// kept for the next admission, adopted when the config is applied;
// admission.Admitter.Source).
//
// The informers keep of each object only what the templates can read
// (dryrun.Pipeline.Keep). When idle, once for each published render, the
// shadow checks read one object of each store whole from the API server
// and render the live state with it (package shadow, prune); a mismatch turns pruning off and the config
// loop lists every watched resource again, whole (relistWhole).
//
// The shortcuts the controller takes (package shortcut: incremental
// rendering, the map-only and read-set skips, pruned stores) are checked against the full
// computation while it runs (package shadow, shortcuts.go): samples from
// the live rounds and the admissions are checked when the controller is
// idle (Options.ShortcutCheckWhenIdle, the idle periods internal/memreturn
// finds) and at least every Options.ShortcutCheckEvery live renders, one at
// a time, interrupted by any admission or live round. A mismatch turns that
// shortcut off for the rest of the process, forgets the decisions kept for
// repeated requests, runs the live round again in full, records a Warning
// Event (ShortcutMismatch) and sets condition ShortcutsVerified False (True
// while every check agreed).
//
// Informer updates that keep an object's resourceVersion (resyncs) are
// skipped; a config update that keeps the spec (metadata, status) does not
// reload anything.
//
// A change of the config reconfigures the controller without a restart:
// informers whose (resource, labelSelector, indexBy) did not change keep
// their store, new ones are started and waited for, removed ones stopped.
//
// The webhook's serving certificate comes from files or a Secret (package
// servingcert); the leader keeps the ValidatingWebhookConfiguration's
// webhooks in line with the applied config (package registration).
//
// Readiness: the webhook listens from the start, but until the stores of the
// first good config synced and a serving certificate is loaded, /readyz on
// the health address answers 503 and every admission request is denied with
// "htc is starting: stores not synced yet" (failing closed, like the
// webhook's failurePolicy: Fail would). /healthz answers 200 while the
// process runs.
//
// Metrics (package metrics; own registry, served on Options.MetricsAddr at
// /metrics):
//
//	htc_admission_requests_total{gvk,result}           counter
//	htc_admission_duration_seconds{phase}              histogram, whole request;
//	                                                   phase is the denying phase,
//	                                                   "none" when admitted
//	htc_admission_validation_duration_seconds{phase}   histogram, the dry-run only
//	htc_admission_in_flight                            gauge
//	htc_test_cache_hits_total                          counter, admissions whose embedded
//	                                                   test results came from the cache
//	htc_admission_renders_alike_total                  counter, changes admitted without a
//	                                                   check: no field the templates read changed
//	htc_admission_reused_total                         counter, admissions answered with the
//	                                                   decision of an identical request
//	htc_check_cache_hits_total                         counter, admissions whose check outcome
//	                                                   came from the check cache
//	htc_check_semantic_reused_total                    counter, admissions whose haproxy -c run
//	                                                   was reused (map-only shortcut)
//	htc_parse_cache_hits_total, _misses_total          counters, the checker's parse cache
//	htc_parse_cache_entries                            gauge, sections it holds
//	htc_webhook_certificate_expiry_seconds             gauge, seconds until NotAfter
//	htc_config_reloads_total{result}                   counter
//	htc_ready                                          gauge, 1 when serving
//	htc_check_phase_duration_seconds{phase}            histogram, each render and check
//	                                                   phase of a dry run; semantic is haproxy -c
//	htc_live_checks_total{result}                      counter, live rounds: valid, invalid
//	htc_live_config_valid                              gauge, 1 when the last live round passed
//	htc_live_check_duration_seconds                    histogram, a live render + check
//	htc_live_rounds_deferred_total                     counter, quiet periods a due live round
//	                                                   waited for admissions being checked
//	htc_live_updates_alike_total                       counter, updates of watched objects stored
//	                                                   without a live round: no field the
//	                                                   templates read changed
//	htc_publish_total{result}                          counter: written, unchanged, error
//	htc_haproxy_reloads_total{result,reason}           counter: success, failed (HAProxy refused),
//	                                                   error (socket not reached), skipped; reason:
//	                                                   unknown, structure, servers, files,
//	                                                   runtime-failed, mismatch, runtime-off, unchanged,
//	                                                   master-slots
//	htc_haproxy_reload_duration_seconds                histogram, reload until the new worker
//	htc_haproxy_runtime_applies_total{kind,result}     counter, changes applied through the runtime
//	                                                   API: server, map, cert (session, show); applied, failed
//	htc_haproxy_reloads_avoided_total                  counter, rounds applied at run time
//	htc_runtime_checks_total{result}                   counter, comparisons of what HAProxy runs with
//	                                                   the files: agreed, mismatch, error, stale
//	htc_runtime_mismatch_total{kind}                   counter, differences found (each repaired)
//	htc_live_change_to_served_seconds{via}             histogram, first change of a round until
//	                                                   HAProxy runs it: runtime, reload
//	htc_shortcut_checks_total{shortcut,result}         counter, run-time checks of a shortcut:
//	                                                   agreed, mismatch, stale, cancelled, error
//	htc_shortcut_mismatch_total{shortcut}              counter, shortcuts found giving another
//	                                                   answer (render, map-only, read-set, prune)
//	htc_shortcut_enabled{shortcut}                     gauge, 1 while the shortcut is taken
//	htc_resource_status_writes_total{result}           counter, status documents: written, unchanged,
//	                                                   conflict, gone, error, not_leader
//
// The status of watched objects (package objstatus, package resourcestatus):
// the resourceStatus documents of a round whose configuration passed (and
// runs, when publishing) go to a writer beside the live loop; the leader
// applies each one the object's status (as the store holds it: with
// spec.resourceStatus the stores keep .status) does not already satisfy,
// by server-side apply on the status subresource (field manager htc,
// force, the resourceVersion of the object the render read as a
// precondition: never a document rendered from an object the store has
// since replaced); failures are retried with back-off, and a new leader
// writes the newest documents.
package controller
