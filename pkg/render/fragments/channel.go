package fragments

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Channel holds what fragments emitted on one channel: the first value of
// each key. Once read, it takes no more.
type Channel struct {
	entries map[string]any
	read    bool
	sorted  []string // the keys, sorted by the first ReadPrefix
}

// NewChannel returns an empty channel with room for n entries.
func NewChannel(n int) *Channel { return &Channel{entries: make(map[string]any, n)} }

// Add adds e to the channel unless its key has a value already; it fails
// once the channel was read.
func (c *Channel) Add(e Emission) error {
	if c.read {
		return fmt.Errorf("emit %q %q: emitted already read the channel (render every fragment that emits on it first)", e.Channel, e.Key)
	}
	if _, ok := c.entries[e.Key]; !ok {
		c.entries[e.Key] = e.Value
	}
	return nil
}

// Len is the number of entries.
func (c *Channel) Len() int { return len(c.entries) }

// Read returns the entries (the caller must not modify them); the channel
// takes no more.
func (c *Channel) Read() map[string]any {
	c.read = true
	return c.entries
}

// ReadPrefix returns the entries whose key begins with p; the channel
// takes no more. The keys are sorted once, on the first call, so that
// each call costs a binary search and the entries it returns.
func (c *Channel) ReadPrefix(p string) map[string]any {
	c.read = true
	if c.sorted == nil {
		c.sorted = slices.Sorted(maps.Keys(c.entries))
	}
	out := map[string]any{}
	for i, _ := slices.BinarySearch(c.sorted, p); i < len(c.sorted) && strings.HasPrefix(c.sorted[i], p); i++ {
		out[c.sorted[i]] = c.entries[c.sorted[i]]
	}
	return out
}
