// Package inventory is the policy's knowledge of HAProxy 3.0 as tables:
// every keyword each section's parser accepts, the arity of every bind,
// server and crt-list option, the http actions, and the classification of
// everything that names a file, an address or code (Table). It decides
// nothing: the policy (pkg/haproxy/policy) reads a configuration and looks
// its words up here, and denies what it cannot find. The method and the
// counts are in docs/policy-inventory.md.
//
// A map of the package:
//
//   - classes.go: Entry (one row: where, name, Class, Base, the
//     AllowedDirectives Key that permits it, the HAProxy source, an
//     example line the tests run), the Class and Base values and the Key*
//     constants.
//   - table.go: Table, one row per name, each citing the HAProxy 3.0
//     source that does the access.
//   - keywords30.go: SectionHeaders, SPOEHeaders, BindOptions,
//     ServerOptions, CRTListOptions, HTTPActions and the keyword lists per
//     section, taken from the 3.0.11 binary and its parsers.
//   - keywords.go: SectionKeywords (the lists as sets), IsKeyword and
//     StartsSection.
//
// The maps are filled at init and never written after: read them only.
// The policy's tests (inventory_test.go) run every row's example through
// the policy and compare the lists with the real HAProxy.
package inventory
