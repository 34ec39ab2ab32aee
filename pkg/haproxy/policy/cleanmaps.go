package policy

import (
	"container/list"
	"strings"
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
// compare the answers with Evaluate's.
//
// A content not remembered is compared with the last clean content of the
// same name read the same way (any clean content would do; the name only
// finds a similar one): the lines of their common prefix and suffix, cut at
// line ends (changedLines), are lines of the clean content, so only the
// lines between are checked; when they are clean so is the whole, else the
// full check runs. FuzzChangedLinesCheckAsTheWhole compares this with the
// check of every line. Bounded (maxCleanMaps entries,
// maxCleanBytes of content), least recently used first out; safe for
// concurrent use.
type cleanMaps struct {
	mu    sync.Mutex
	byKey map[cleanKey]*list.Element // -> element holding its cleanEntry
	order list.List                  // most recently used first
	bytes int
	last  map[nameUse]cleanKey // the last clean content of a name, kept in byKey
}

// cleanEntry is a remembered content and the name it was checked under.
type cleanEntry struct {
	key  cleanKey
	name nameUse
}

// nameUse is a file's name and how it is read.
type nameUse struct {
	name string
	use  mapfile.Use
}

// maxCleanMaps and maxCleanBytes bound a cleanMaps: the maps of the live
// bundle of 10,000 Ingresses (about 2 MB) and the changed maps of a few
// proposals (an entry keeps its content alive, also once no bundle holds
// it: what the bound allows beyond the live maps stays in the heap at rest).
const (
	maxCleanMaps  = 256
	maxCleanBytes = 4 << 20
)

// cleanKey is one content by identity, and how it is read.
type cleanKey struct {
	data *byte
	n    int
	use  mapfile.Use
}

func newCleanMaps() *cleanMaps {
	return &cleanMaps{byKey: map[cleanKey]*list.Element{}, last: map[nameUse]cleanKey{}}
}

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

// similar returns the last content of name read as u that was checked
// clean ("" when there is none).
func (c *cleanMaps) similar(name string, u mapfile.Use) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.last[nameUse{name, u}]
	if !ok {
		return ""
	}
	return unsafe.String(k.data, k.n) // alive: the key's pointer holds it
}

// add remembers that the check of content (file name), read as u, found
// nothing.
func (c *cleanMaps) add(name, content string, u mapfile.Use) {
	if c == nil || content == "" || len(content) > maxCleanBytes {
		return
	}
	k, nu := keyOfContent(content, u), nameUse{name, u}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.last) >= 4*maxCleanMaps {
		clear(c.last) // many names share few contents: start again
	}
	c.last[nu] = k
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(cleanEntry{k, nu})
	c.bytes += k.n
	for c.order.Len() > maxCleanMaps || c.bytes > maxCleanBytes {
		old := c.order.Remove(c.order.Back()).(cleanEntry)
		delete(c.byKey, old.key)
		c.bytes -= old.key.n
		for nu, k := range c.last {
			if k == old.key {
				delete(c.last, nu)
			}
		}
	}
}

// changedLines returns the lines of content that are not lines of clean:
// content less the longest prefix and suffix it shares with clean, the
// prefix cut after a line end, the suffix starting at a line start in
// both texts (else after the shared suffix's first line end). Every line of content is in exactly one of the
// three parts, and those of the prefix and suffix are whole lines of clean.
func changedLines(clean, content string) string {
	limit := min(len(clean), len(content))
	p := sharedRun(limit, func(i, n int) bool { return clean[i:i+n] == content[i:i+n] })
	p = strings.LastIndexByte(content[:p], '\n') + 1
	q := sharedRun(limit-p, func(i, n int) bool {
		return clean[len(clean)-i-n:len(clean)-i] == content[len(content)-i-n:len(content)-i]
	})
	end, cs := len(content)-q, len(clean)-q // where the shared suffix starts
	lineStart := func(text string, at int) bool { return at == 0 || text[at-1] == '\n' }
	if !lineStart(content, end) || !lineStart(clean, cs) {
		if i := strings.IndexByte(content[end:], '\n'); i >= 0 {
			end += i + 1 // the next line start, in both
		} else {
			end = len(content)
		}
	}
	return content[p:end]
}

// sharedRun returns the largest m <= limit such that equal(0, m) holds,
// given equal(i, n) compares n bytes from offset i of two texts (whole
// chunks at once: a string comparison is far faster than a byte loop).
func sharedRun(limit int, equal func(i, n int) bool) int {
	m := 0
	for n := 4096; n >= 1; n /= 8 {
		for m+n <= limit && equal(m, n) {
			m += n
		}
	}
	return m
}

// retain forgets every content that is not one of keep (by identity, as
// the contents are kept), and the last clean content of a name when it is
// forgotten: the changed maps of proposals, which c would otherwise keep
// alive at rest. A content forgotten is checked in full (or by its changed
// lines) again: retain changes how fast a check is, never its answer.
func (c *cleanMaps) retain(keep []string) {
	if c == nil {
		return
	}
	live := make(map[contentKey]bool, len(keep))
	for _, s := range keep {
		live[contentKey{unsafe.StringData(s), len(s)}] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		if k := e.Value.(cleanEntry).key; !live[contentKey{k.data, k.n}] {
			c.order.Remove(e)
			delete(c.byKey, k)
			c.bytes -= k.n
		}
		e = next
	}
	for nu, k := range c.last {
		if _, ok := c.byKey[k]; !ok {
			delete(c.last, nu)
		}
	}
}

// contentKey is a content by identity, however it is read.
type contentKey struct {
	data *byte
	n    int
}
