package bundle

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"unsafe"

	"github.com/haproxy-template/htc/internal/contenthash"
)

// Hash is the SHA-256 of the bundle's files (each one's relative path and
// the SHA-256 of its content, in AllFiles order), hex-encoded. Two bundles
// with equal hashes write identical directories. BaseDir enters only
// through the content (the paths pathFor wrote into it). The hash is only
// compared within the process (it is neither stored nor shown).
func (b *Bundle) Hash() string { return b.hashWith(nil) }

// hashWith is Hash, the digests of large contents taken from h (nil: none).
func (b *Bundle) hashWith(h *Hasher) string {
	k := contenthash.New()
	var d [sha256.Size]byte // one array for every file (it escapes)
	for _, f := range b.AllFiles() {
		d = h.digest(f.Content)
		k.String(f.RelPath).Bytes(d[:])
	}
	return k.Sum()
}

// Hasher computes Bundle.Hash remembering the digests of large contents
// by the identity of their string (where its bytes are and how many): a
// render returns the last render's very string for haproxy.cfg and every
// map an admission did not change, so only the changed files are hashed
// again. The shortcut, and why its answer is Hash's:
//
// a digest is a function of the content's bytes; an entry's key holds a
// pointer to the string's bytes, which keeps them alive and unchanged (a Go
// string is immutable), so no other content can have the key while the
// entry exists; a miss hashes the content. TestHasherIsHash compares its
// answers with Hash's. Bounded (maxDigests entries, maxDigestBytes of
// content kept alive), least recently used first out; contents under
// minDigestBytes are hashed every time. Safe for concurrent use.
type Hasher struct {
	mu    sync.Mutex
	byKey map[contentKey]*list.Element // -> element holding its digestEntry
	order list.List                    // most recently used first
	bytes int
	hits  int // digests answered from memory, for tests
}

// The bounds of a Hasher: the files of the live bundle of 10,000
// Ingresses (about 3 MB) and the changed maps of a few proposals. An
// entry keeps its content alive, also once no bundle holds it: what the
// bound allows beyond the live bundle stays in the heap at rest.
const (
	maxDigests     = 256
	maxDigestBytes = 6 << 20
	minDigestBytes = 4 << 10
)

// contentKey is one content by identity.
type contentKey struct {
	data *byte
	n    int
}

// digestEntry is a remembered digest.
type digestEntry struct {
	key    contentKey
	digest [sha256.Size]byte
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{byKey: map[contentKey]*list.Element{}} }

// Hash is b.Hash().
func (h *Hasher) Hash(b *Bundle) string { return b.hashWith(h) }

// digest returns the SHA-256 of content, remembered in h when h is not nil
// and content is large enough.
func (h *Hasher) digest(content string) [sha256.Size]byte {
	if h == nil || len(content) < minDigestBytes || len(content) > maxDigestBytes {
		return sha256.Sum256(unsafe.Slice(unsafe.StringData(content), len(content)))
	}
	k := contentKey{data: unsafe.StringData(content), n: len(content)}
	h.mu.Lock()
	if e, ok := h.byKey[k]; ok {
		h.order.MoveToFront(e)
		h.hits++
		d := e.Value.(digestEntry).digest
		h.mu.Unlock()
		return d
	}
	h.mu.Unlock()
	d := sha256.Sum256(unsafe.Slice(unsafe.StringData(content), len(content))) // read only
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.byKey[k]; !ok {
		h.byKey[k] = h.order.PushFront(digestEntry{k, d})
		h.bytes += k.n
		for h.order.Len() > maxDigests || h.bytes > maxDigestBytes {
			old := h.order.Remove(h.order.Back()).(digestEntry)
			delete(h.byKey, old.key)
			h.bytes -= old.key.n
		}
	}
	return d
}

// Retain forgets every digest whose content is not one of b's files (by
// identity, as the digests are kept): the changed files of proposals,
// which the Hasher would otherwise keep alive at rest, up to its bounds.
// A digest forgotten is computed again when asked for: Retain changes how
// fast a Hash is, never its answer. A nil b forgets every digest.
func (h *Hasher) Retain(b *Bundle) {
	keep := map[contentKey]bool{}
	if b != nil {
		for _, f := range b.AllFiles() {
			keep[contentKey{data: unsafe.StringData(f.Content), n: len(f.Content)}] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for e := h.order.Front(); e != nil; {
		next := e.Next()
		if k := e.Value.(digestEntry).key; !keep[k] {
			h.order.Remove(e)
			delete(h.byKey, k)
			h.bytes -= k.n
		}
		e = next
	}
}
