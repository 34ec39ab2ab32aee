// Package testrun runs a config's embedded validation tests
// (spec.validationTests): each test's fixtures fill stores shaped like the
// controller's (fixtures.go, decoded as the informers decode objects), the
// templates render over them, the bundle is checked as a live one is, and
// the assertions (assertions.go) judge what was rendered and checked.
// Runner.Run runs every test under the caller's deadline and reports each
// one (passed, failed, timed out, not run); a Report's Err is a
// *phase.Error of the tests phase naming every test that did not pass.
//
// Cache (cache.go) keeps reports by the spec's hash, so that a config the
// webhook judged once is not tested again; on disk (disk.go, htc check
// --test-cache) the key is salted with the htc build, the haproxy binary
// and the operator's grant. Incomplete runs are never kept. docs/caches.md
// lists it with the other caches.
package testrun
