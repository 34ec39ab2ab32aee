package resourcestatus

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseCachedIsParse: a parse that takes decodings from the cache of
// another text answers exactly as a parse without one.
func FuzzParseCachedIsParse(f *testing.F) {
	const doc = "{apiVersion: v1, kind: Service, metadata: {namespace: d, name: %s}, status: %s}"
	for _, seed := range [][2]string{
		{fmt.Sprintf(doc, "a", "{x: 1}"), fmt.Sprintf(doc, "a", "{x: 1}") + "\n---\n" + fmt.Sprintf(doc, "b", "{}")},
		{fmt.Sprintf(doc, "a", "{x: 1}"), fmt.Sprintf(doc, "a", "{x: 2}")},
		{"---\n\n---\n# c\n", "# c\n---\n" + fmt.Sprintf(doc, "a", "[]")},
		{"a: [", "a: [\n---\n" + fmt.Sprintf(doc, "a", "{}")},
		{fmt.Sprintf(doc, "a", "{}") + "\n", "\n" + fmt.Sprintf(doc, "a", "{}") + "\n---\n" + fmt.Sprintf(doc, "a", "{}") + "\n"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		_, cache, _ := ParseCached(first, nil)
		want, wantErr := Parse(second)
		got, _, gotErr := ParseCached(second, cache)
		assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr))
		assert.Equal(t, want, got)
	})
}

func TestParseCachedReusesDecodings(t *testing.T) {
	text := "{apiVersion: v1, kind: Service, metadata: {name: a}, status: {x: 1}}\n---\n{apiVersion: v1, kind: Service, metadata: {name: b}, status: {}}"
	docs, cache, err := ParseCached(text, nil)
	require.NoError(t, err)
	require.Len(t, cache, 2)
	again, next, err := ParseCached("\n---\n"+text, cache)
	require.NoError(t, err)
	assert.Equal(t, 3, again[0].Line, "positions are this text's")
	assert.Equal(t, docs[1].Status, again[1].Status)
	assert.Same(t, cache[strings.SplitN(text, "\n---\n", 2)[0]], next[strings.SplitN(text, "\n---\n", 2)[0]], "the decoding was reused")
	_, failed, err := ParseCached(text+"\n---\na: [", cache)
	require.Error(t, err)
	assert.Nil(t, failed, "a failed parse leaves no cache")
}

// BenchmarkParse parses 10,000 Ingress status documents, with and without
// the decodings of an equal text.
func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "---\n{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"Ingress\",\"metadata\":{\"name\":\"app%d\",\"namespace\":\"ns%d\"},\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"203.0.113.10\"}]}}}\n", i, i%3)
	}
	text := sb.String()
	_, cache, err := ParseCached(text, nil)
	require.NoError(b, err)
	for _, c := range []struct {
		name  string
		cache Cache
	}{{"decoded", nil}, {"cached", cache}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ParseCached(text, c.cache); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
