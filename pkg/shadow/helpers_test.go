package shadow

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// How long a test waits for what the Verifier's goroutine reports (a
// failsafe, not a timing), and how often it looks.
const (
	testWait = 60 * time.Second
	testTick = 10 * time.Millisecond
)

func ingressResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
}
