// Package resourcestatus is how a template library publishes the status of
// the objects it watches: spec.resourceStatus renders YAML documents over
// the same state as the configuration, in the same render, so the status
// a user reads, the configuration HAProxy runs and the webhook's verdict
// never disagree.
//
// # Documents
//
// The rendered text is a stream of YAML (or JSON) documents separated by
// lines that hold only "---". Empty documents (blank or comment lines) are
// skipped. Each other document is exactly
//
//	apiVersion: networking.k8s.io/v1
//	kind: Ingress
//	metadata: {namespace: default, name: web}   # no namespace: cluster-scoped
//	status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}
//
// Parse refuses anything else (another key, a missing or non-string name,
// a status that is not a map, a duplicate key, a document larger than
// MaxDocumentBytes) and Resolve refuses two documents for one object and a
// document whose object is not in a watched resource with writeStatus of
// the rendered state (so a value that breaks out of its place cannot name
// a Service, Secret or any kind the library does not declare, nor an
// object that is not there): both are render failures (package
// render) whose message names the document, its line and its object (a
// YAML parser's own "line N" counts from the document's first line). A
// template emits a document only for objects it serves; an object without
// one is left alone. Templates should put values in with toJson: YAML
// reads an unquoted no or on as a boolean, and a value holding a newline
// and "---" would start a document of its own (naming another object).
//
// # Writing
//
// The controller's leader writes a document once the configuration of the
// same render passed every check (and was published, when it publishes),
// and only when Satisfied says the object's status does not already hold
// it. It writes with server-side apply of exactly the document's status,
// on the status subresource, with field manager "htc", force, and the
// resourceVersion of the object the render read as a precondition
// (ApplyObject):
//
//   - htc owns the status fields its documents set, and only those: other
//     controllers' fields are untouched, and a field htc applied before
//     and no longer sets is removed by the API server.
//   - A list the API declares atomic (Ingress status.loadBalancer.ingress,
//     Gateway API route status.parents) is owned whole by its last writer.
//     A library shares such a list by read-modify-write, as the Gateway API
//     spec requires for status.parents: the template reads the object's
//     status (the stores keep it) and renders the whole list, the other
//     controllers' entries as they are and its own as it wants them. The
//     precondition is the resourceVersion of the object the render read
//     (Document.ResourceVersion, set by Resolve), never a newer one: a
//     document whose object changed since is not written (a conflict,
//     counted; when the controller's store already holds the newer object
//     it asks for a round, which renders the document from that object).
//
// # Conditions
//
// Templates have no clock. A condition (a map with "type" and "status" in a
// list named "conditions") written without lastTransitionTime keeps the
// lastTransitionTime of the object's condition of the same type at the
// same place when its status is the same, and gets the time of the write
// otherwise (FillTransitionTimes); Satisfied ignores a lastTransitionTime
// the document does not set.
package resourcestatus
