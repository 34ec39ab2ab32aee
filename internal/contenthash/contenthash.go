// Package contenthash builds the content-hash keys htc's caches and
// fingerprints are keyed on (docs/caches.md): SHA-256 over a sequence of
// fields, each written as its length (8 bytes, big-endian) and then its
// bytes. The length prefix makes the framing unambiguous: no two different
// sequences of fields have the same input, whatever bytes (NULs,
// separators) the fields hold. Every key of the repository is built with
// it, so a key never depends on how one call site chose to join its parts.
package contenthash

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// chunk is how much of a string goes into the hash at once: a string is
// written through the Key's scratch buffer, never copied whole.
const chunk = 32 << 10

// Key accumulates fields. The zero Key is not usable; call New.
type Key struct {
	h       hash.Hash
	scratch []byte // the length prefix, then up to chunk bytes of a string
}

// New returns an empty Key.
func New() *Key {
	return &Key{h: sha256.New(), scratch: make([]byte, 0, 64)}
}

// String adds one field holding s and returns k.
func (k *Key) String(s string) *Key {
	k.scratch = binary.BigEndian.AppendUint64(k.scratch[:0], uint64(len(s)))
	for {
		n := min(len(s), chunk-len(k.scratch))
		k.scratch = append(k.scratch, s[:n]...)
		k.h.Write(k.scratch)
		k.scratch, s = k.scratch[:0], s[n:]
		if len(s) == 0 {
			return k
		}
	}
}

// Bytes adds one field holding p and returns k.
func (k *Key) Bytes(p []byte) *Key {
	k.scratch = binary.BigEndian.AppendUint64(k.scratch[:0], uint64(len(p)))
	k.h.Write(k.scratch)
	k.h.Write(p)
	return k
}

// Strings adds each of ss as a field and returns k.
func (k *Key) Strings(ss ...string) *Key {
	for _, s := range ss {
		k.String(s)
	}
	return k
}

// Reset empties k for another key (one Key can build many without
// allocating) and returns it.
func (k *Key) Reset() *Key {
	k.h.Reset()
	return k
}

// Sum returns the key of the fields added so far, hex-encoded. More fields
// may be added after it.
func (k *Key) Sum() string { return hex.EncodeToString(k.h.Sum(nil)) }

// Sum256 returns the key of the fields added so far as an array (a map
// key without the hex encoding).
func (k *Key) Sum256() [sha256.Size]byte {
	var out [sha256.Size]byte
	k.h.Sum(out[:0])
	return out
}

// Of returns the hex key of the fields.
func Of(fields ...string) string { return New().Strings(fields...).Sum() }
