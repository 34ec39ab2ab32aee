// Package store holds indexed, thread-safe, in-memory stores of unstructured
// Kubernetes objects, fed by informers (or, offline, by manifests), and the
// Overlay that presents one proposed change on top of an actual store without
// copying or mutating it.
package store
