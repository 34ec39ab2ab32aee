// Package objstatus writes the status documents a live round rendered
// (spec.resourceStatus, package resourcestatus) to the watched objects
// (writer.go): Writer applies the newest Batch beside the live loop, only
// on the leader, only what differs from the object's status in the store,
// by server-side apply on the status subresource (field manager htc,
// force, the resourceVersion of the object the render read as a
// precondition: a document whose object the store has since replaced is
// not written, and Writer.Stale asks for a round that renders it again);
// failures are retried with back-off, and a new leader writes the newest
// batch (Kick).
// Writes counts the documents by result (htc_resource_status_writes_total).
package objstatus
