package policy

import (
	"container/list"
	"sync"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// cleanMaps remembers the map and pattern file contents whose lines the
// map check (checkMapContent) found nothing in, by the identity of the
// string (where its bytes are and how many) and how HAProxy reads it: an
// admission's render returns the very string of the last render for every
// map it did not change, so only the changed maps are read line by line
// again. The shortcut, and why its answer is the full check's:
//
// the check of a content is a function of its bytes and of the Use alone
// (mapfile.LineProblem); an entry's key holds a pointer to the string's
// bytes, which keeps them alive and unchanged (a Go string is immutable),
// so no other content can have the key while the entry exists. Only a
// check that found nothing is kept; anything else (a miss, a finding) runs
// the full check. TestCleanMapsAreTheFullCheck and FuzzScansAreEvaluate
// compare the answers with Evaluate's. Bounded (maxCleanMaps entries,
// maxCleanBytes of content), least recently used first out; safe for
// concurrent use.
type cleanMaps struct {
	mu    sync.Mutex
	byKey map[cleanKey]*list.Element // -> element holding the cleanKey
	order list.List                  // most recently used first
	bytes int
}

// maxCleanMaps and maxCleanBytes bound a cleanMaps: the maps of a few
// bundles (an entry keeps its content alive, also once no bundle holds it).
const (
	maxCleanMaps  = 256
	maxCleanBytes = 8 << 20
)

// cleanKey is one content by identity, and how it is read.
type cleanKey struct {
	data *byte
	n    int
	use  mapfile.Use
}

func newCleanMaps() *cleanMaps { return &cleanMaps{byKey: map[cleanKey]*list.Element{}} }

func keyOfContent(content string, u mapfile.Use) cleanKey {
	return cleanKey{data: unsafe.StringData(content), n: len(content), use: u}
}

// clean reports whether content, read as u, was checked clean before.
// A nil cleanMaps knows nothing.
func (c *cleanMaps) clean(content string, u mapfile.Use) bool {
	if c == nil || content == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[keyOfContent(content, u)]
	if ok {
		c.order.MoveToFront(e)
	}
	return ok
}

// add remembers that the check of content, read as u, found nothing.
func (c *cleanMaps) add(content string, u mapfile.Use) {
	if c == nil || content == "" || len(content) > maxCleanBytes {
		return
	}
	k := keyOfContent(content, u)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(k)
	c.bytes += k.n
	for c.order.Len() > maxCleanMaps || c.bytes > maxCleanBytes {
		old := c.order.Remove(c.order.Back()).(cleanKey)
		delete(c.byKey, old)
		c.bytes -= old.n
	}
}
