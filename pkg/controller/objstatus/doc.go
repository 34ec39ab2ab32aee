// Package objstatus writes the status documents a live round rendered
// (spec.resourceStatus, package resourcestatus) to the watched objects
// (writer.go): Writer applies the newest Batch beside the live loop, only
// on the leader, only what differs from the object's status in the store,
// by server-side apply on the status subresource (field manager htc,
// force, the object's resourceVersion as a precondition); failures are
// retried with back-off, and a new leader writes the newest batch (Kick).
// Writes counts the documents by result (htc_resource_status_writes_total).
package objstatus
