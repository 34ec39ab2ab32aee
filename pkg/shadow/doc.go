// Package shadow checks, at run time, that the controller's shortcuts
// (package shortcut) gave the answers the full computation gives:
//
//	render    the live state, rendered in full (render.Input.Full), is
//	          byte for byte the incremental render the live loop published
//	          and judged admissions by; and an admission's proposal (the
//	          live stores with the change in an overlay, the path live
//	          renders never take), rendered in full over the same live
//	          state, has the hash of the bundle the admission rendered
//	map-only  haproxy -c, reusing no run (haproxy.Checker.Unreused),
//	          accepts a bundle that was accepted through the map-only skip
//	          (maps checked alone by a stub configuration included)
//	read-set  the live state with a change admitted without rendering
//	          renders, in full, the bundle it renders with the objects the
//	          change replaced
//	carry     a proposed config's render that applied the live render's
//	          fragment records (render.Engine.Carry), rendered in full by
//	          the proposed config over the same live state, has the hash
//	          of the bundle its admission rendered
//	prune     the live state with one object of each store read again
//	          whole from the API server (Options.Reread), in place of what
//	          the store keeps of it, renders in full the live render
//	          (only when idle, once for each published render, so that a
//	          controller at rest renders nothing; another object of each
//	          store every time)
//
// The live loop and the admission path offer samples (LiveRendered,
// AdmissionRendered, ConfigAdmissionRendered, AcceptedReusing,
// AdmittedAlike); offering never blocks. Kept until checked, never more
// than:
//
//	render    1  the newest live render (its bundle: the live loop keeps it anyway)
//	prune     1  the same (the newest live render that rendered)
//	          4  admission renders (carry's too, with the proposed
//	             config's pipeline): the stores rendered over (the change's
//	             overlay, no copy), the live stores' generations, the bundle's
//	             hash; a full queue drops the new one
//	map-only  2  a bundle each (without its source map); likewise
//	read-set  8  the change and the objects it replaced; likewise
//
// The Verifier checks them at low priority: when the controller is idle
// (Idle, which the idle memory return calls after each quiet period) and
// every Every-th live render (not prune: idle only), one check at a time,
// each under its own deadline; work arriving
// (Busy: an admission, a live round) cancels the check in progress, and
// its sample waits for the next occasion. A sample the state moved on from
// (the stores changed under the renders, the config changed) is dropped as
// stale: an admission sample once any live store's generation moved (an
// admitted change is usually stored moments later, so mostly dry runs and
// denials are compared), never counted as a mismatch. An admission render
// that failed is not sampled: a failure never rests on replayed work.
//
// Each comparison is over one consistent state: a render reads one state
// of the stores (package render renders one the stores were written under
// again, over a snapshot), a sample is kept only when the live stores'
// generations did not move from before its render to after it, and the
// full render is compared only when they still have not moved once it
// ended: both renders read the stores at those generations.
//
// A mismatch of an admission render names the request's object only
// ("the admission of Secret default/web-tls: ..."): its bundle is not
// kept.
//
// A mismatch is logged (the shortcut, the output, line and object the
// bundles' source map names, never their content), counted, reported
// (Options.Report: the controller's ShortcutsVerified condition and an
// Event; after a prune mismatch it lists every watched resource again,
// whole) and turns that shortcut off for the rest of the process
// (shortcut.Switches): the work is then done in full, never answered
// wrongly.
//
// Metrics (registered on Options.Registerer):
//
//	htc_shortcut_checks_total{shortcut,result}  counter; result: agreed,
//	                                            mismatch, stale, cancelled,
//	                                            error (timed out, or the
//	                                            checker could not run)
//	htc_shortcut_mismatch_total{shortcut}       counter
//	htc_shortcut_enabled{shortcut}              gauge, 1 while the shortcut
//	                                            is taken
package shadow
