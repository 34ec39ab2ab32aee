// Package statusdocs turns the text of spec.resourceStatus, rendered by
// package render after every output over the same state, into the status
// documents that ride on the bundle (bundle.Bundle.Status): parsed and
// resolved to watched objects by package resourcestatus, decodings reused
// by text from the last render that decoded them all, equal statuses kept
// once, objects found taken from the last recording render's for the
// documents whose stores answer as then (resourcestatus.ResolveKept). A
// document that does not parse or names an object that is not in
// the rendered state is an error attributed to the object it names when
// watched, else to the object that wrote it.
//
// # Map
//
//   - decoder.go: TemplateName; Decoder, one engine's decoding of its
//     renders' status text (New from the spec, Decode per render, with the
//     objects an error is attributed to).
package statusdocs
