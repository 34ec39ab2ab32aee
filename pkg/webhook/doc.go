// Package webhook is htc's HTTPS admission server: it decodes AdmissionReview
// v1 requests, runs the structural check, looks up the validator registered
// for the object's GVK, and answers allowed (with warnings) or denied (with
// the simplified reason and a status cause per failure). It also extracts the webhook rules from the config and
// resolves them to GVKs with a discovery-backed RESTMapper.
//
// The pieces, in the order a request meets them:
//
//   - Server (NewServer, Run, Serve): TLS 1.2+ on :9443, POST /validate and
//     GET /healthz ("ok"), 10 s read/write timeouts, HTTP/2 off unless
//     enabled, optional client-certificate verification, 30 s graceful
//     shutdown when the context is cancelled. The certificate is fixed PEM
//     or comes from a CertWatcher, which reloads files (polling) or takes PEM
//     pushed from a Secret (Update), keeping the old certificate when a new
//     one does not load.
//   - Handler (NewHandler): POST only (405), Content-Type application/json
//     (415), body at most 8 MiB (413), AdmissionReview admission.k8s.io/v1
//     with a request and a uid (400). While HandlerOptions.Ready says the
//     handler is not ready (the controller's stores have not synced), every
//     such request is denied with Ready's reason. Then, for CREATE, UPDATE
//     and DELETE:
//     the structural check (the object, or the old object for DELETE, must
//     be a JSON object with apiVersion, kind and metadata.name or
//     metadata.generateName, else denied without running a validator, even
//     for a kind no validator is registered for); the Validator registered
//     for the request's kind (request.kind) in the Registry, called with
//     admission.Request{Resource: request.resource, ...} under the one
//     deadline of the admission path, set here when the request arrives:
//     the timeout the API server puts in the URL (?timeout=10s, the
//     webhook's timeoutSeconds), capped by HandlerOptions.Timeout (5 s by
//     default), which is also the default. Everything below honours it.
//     The validator returns the Decision and its admission.Report: the
//     response is built from the Decision alone (FromDecision), the
//     Outcome's phase is busy when the report says Busy.
//     Other operations (CONNECT) are allowed. A request with dryRun: true is
//     validated like any other. The response always carries the request's
//     uid. A panic is answered 500 and the server keeps serving.
//   - Fail-open: a kind not in the Registry is allowed (the API server only
//     sends kinds the rules name, so this is a stale configuration); no
//     Registry, a Registry never Set, or a registered kind without a
//     Validator is allowed with a logged warning.
//   - Registry: GVK string ("v1.Service", "networking.k8s.io/v1.Ingress",
//     "version.Kind" or "group/version.Kind", as Rule.GVKString) to Validator, replaced as a whole, atomically, when the
//     configuration changes; lookups take no lock.
//   - Rules and NewDiscoveryRESTMapper: the watched resources with
//     webhookValidation: true, resolved from plural resource to Kind by the
//     API server's discovery (never guessed), plus HAProxyTemplateConfig
//     itself; CREATE and UPDATE are intercepted.
//
// Metrics are left to the caller: the Handler reports every request to an
// Observer (in flight, and an Outcome with GVK, operation, result, phase and
// duration), and CertWatcherOptions.OnChange reports the certificate's
// expiry. Logging goes to an injected *slog.Logger: one line per admission.
package webhook
