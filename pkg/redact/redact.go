// Package redact removes secrets from text that leaves the controller: the
// reasons and warnings of admission responses, the messages of status
// conditions and Events, and the log lines that repeat them.
//
// A Redactor knows a set of secret values — the data of Secrets (as stored,
// base64-encoded, and decoded, whole and line by line), the controller's
// environment values, its host name, its temporary directories — and
// replaces every occurrence of one of them in a text with "[redacted]". It
// scans a text once, window by window: values are indexed by their first
// MinLen bytes, so each position costs one map lookup plus a comparison with
// the values that share that prefix (few in practice; 10,000 values sharing
// one prefix cost about 5 ms on a 5 KB text, see BenchmarkString). The texts
// it sees are short: reasons and warnings are capped.
//
// Values shorter than MinLen bytes are not redacted: they would match
// ordinary words. This is a last line of defence, not the first: templates
// should not put secret data into failure messages, and reasons that can
// carry data of objects the requester may not read are not shown at all
// (see package admission).
package redact

import (
	"encoding/base64"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MinLen is the shortest value a Redactor redacts.
const MinLen = 6

// Mask replaces each redacted occurrence.
const Mask = "[redacted]"

// Redactor replaces known secret values in text. The zero Redactor and a
// nil *Redactor redact nothing. It is immutable once built and safe for
// concurrent use.
type Redactor struct {
	// byPrefix maps the first MinLen bytes of each value to the values
	// that start with them, longest first.
	byPrefix map[string][]string
	// words are redacted only as whole words, whatever their length.
	words []string
}

// Builder collects secret values for a Redactor.
type Builder struct {
	values map[string]struct{}
	words  map[string]struct{}
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{values: map[string]struct{}{}, words: map[string]struct{}{}}
}

// AddWord adds a value redacted only where it stands as a whole word
// (between characters that are not letters, digits, '-', '_' or '.'),
// whatever its length: a short host name such as "vm" is redacted in
// "no peer named 'vm'" but not inside "vmware".
func (b *Builder) AddWord(words ...string) *Builder {
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			b.words[w] = struct{}{}
		}
	}
	return b
}

// Add adds values (and, for a multi-line value, each of its lines).
func (b *Builder) Add(values ...string) *Builder {
	for _, v := range values {
		b.add(v)
		if strings.ContainsAny(v, "\n\r") {
			for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
				b.add(line)
			}
		}
	}
	return b
}

func (b *Builder) add(v string) {
	if v = strings.TrimSpace(v); len(v) >= MinLen {
		b.values[v] = struct{}{}
	}
}

// AddSecret adds the data of a Secret object: each value of .data as stored
// (base64) and decoded, and each value of .stringData. Other objects add
// nothing.
func (b *Builder) AddSecret(obj *unstructured.Unstructured) *Builder {
	if obj == nil || obj.GetKind() != "Secret" {
		return b
	}
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	for _, v := range data {
		s, ok := v.(string)
		if !ok {
			continue
		}
		b.Add(s)
		if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
			b.Add(string(dec))
		}
	}
	plain, _, _ := unstructured.NestedMap(obj.Object, "stringData")
	for _, v := range plain {
		if s, ok := v.(string); ok {
			b.Add(s)
		}
	}
	return b
}

// Build returns the Redactor of the values added so far.
func (b *Builder) Build() *Redactor {
	r := &Redactor{byPrefix: make(map[string][]string, len(b.values))}
	for w := range b.words {
		r.words = append(r.words, w)
	}
	sortLongestFirst(r.words)
	for v := range b.values {
		p := v[:MinLen]
		r.byPrefix[p] = append(r.byPrefix[p], v)
	}
	for p, vs := range r.byPrefix {
		sortLongestFirst(vs)
		r.byPrefix[p] = vs
	}
	return r
}

// sortLongestFirst orders values so that the longest match wins.
func sortLongestFirst(vs []string) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && (len(vs[j]) > len(vs[j-1]) || len(vs[j]) == len(vs[j-1]) && vs[j] < vs[j-1]); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.byPrefix) == 0 && len(r.words) == 0 }

// String returns s with every known value replaced by Mask.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	for _, w := range r.words {
		s = replaceWord(s, w)
	}
	if len(s) < MinLen || len(r.byPrefix) == 0 {
		return s
	}
	var out strings.Builder
	last := 0
	for i := 0; i+MinLen <= len(s); {
		if n := r.matchAt(s, i); n > 0 {
			if out.Len() == 0 && last == 0 {
				out.Grow(len(s))
			}
			out.WriteString(s[last:i])
			out.WriteString(Mask)
			i += n
			last = i
			continue
		}
		i++
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// Strings redacts each of ss into a new slice (nil stays nil).
func (r *Redactor) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.String(s)
	}
	return out
}

// matchAt returns the length of the longest known value at s[i:], or 0.
func (r *Redactor) matchAt(s string, i int) int {
	for _, v := range r.byPrefix[s[i:i+MinLen]] {
		if strings.HasPrefix(s[i:], v) {
			return len(v)
		}
	}
	return 0
}

// replaceWord replaces the whole-word occurrences of w in s by Mask.
func replaceWord(s, w string) string {
	var out strings.Builder
	last := 0
	for i := 0; i+len(w) <= len(s); {
		j := strings.Index(s[i:], w)
		if j < 0 {
			break
		}
		j += i
		end := j + len(w)
		if (j == 0 || !wordByte(s[j-1])) && (end == len(s) || !wordByte(s[end])) {
			out.WriteString(s[last:j])
			out.WriteString(Mask)
			last = end
		}
		i = j + 1
		if last > i {
			i = last
		}
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// wordByte reports whether c continues a word (a host name's characters).
func wordByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
