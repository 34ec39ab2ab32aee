package resourcestatus

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/watched"
)

// FuzzParseCachedIsParse: a parse that takes decodings from the cache of
// another text, and shares the statuses it decodes with those of that
// text, answers exactly as a parse without either.
func FuzzParseCachedIsParse(f *testing.F) {
	const doc = "{apiVersion: v1, kind: Service, metadata: {namespace: d, name: %s}, status: %s}"
	for _, seed := range [][2]string{
		{fmt.Sprintf(doc, "a", "{x: 1}"), fmt.Sprintf(doc, "a", "{x: 1}") + "\n---\n" + fmt.Sprintf(doc, "b", "{}")},
		{fmt.Sprintf(doc, "a", "{x: 1}"), fmt.Sprintf(doc, "a", "{x: 2}")},
		{"---\n\n---\n# c\n", "# c\n---\n" + fmt.Sprintf(doc, "a", "[]")},
		{"a: [", "a: [\n---\n" + fmt.Sprintf(doc, "a", "{}")},
		{fmt.Sprintf(doc, "a", "{}") + "\n", "\n" + fmt.Sprintf(doc, "a", "{}") + "\n---\n" + fmt.Sprintf(doc, "a", "{}") + "\n"},
		// Equal parts of other kinds, and statuses equal but for them.
		{fmt.Sprintf(doc, "a", "{x: [1, {y: 1}]}"), fmt.Sprintf(doc, "b", "{x: [1.5, {y: '1'}]}") + "\n---\n" + fmt.Sprintf(doc, "c", "{x: [1, {y: 1}]}")},
		{fmt.Sprintf(doc, "a", "{x: {}, y: []}"), fmt.Sprintf(doc, "b", "{x: [], y: {}}") + "\n---\n" + fmt.Sprintf(doc, "c", "{x: null, y: {}}")},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		parts := watched.NewShareTable(0)
		_, cache, _ := ParseCached(first, nil, parts)
		want, wantErr := Parse(second)
		got, next, gotErr := ParseCached(second, cache, parts)
		assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr))
		assert.Equal(t, want, got)
		// The cache it returns (the first's, when it missed few) answers
		// as well.
		want, wantErr = Parse(first)
		got, _, gotErr = ParseCached(first, next, parts)
		assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr))
		assert.Equal(t, want, got)
	})
}

// FuzzParseInOrderIsParse: a parse that takes decodings from the order
// and the cache of an exact parse of another text (the recording
// render's), and then one more from what it returns, answers exactly as
// a parse without them, each document a copy of the decoding it names.
func FuzzParseInOrderIsParse(f *testing.F) {
	const doc = "{apiVersion: v1, kind: Service, metadata: {namespace: d, name: %s}, status: %s}"
	a, b, c := fmt.Sprintf(doc, "a", "{x: 1}"), fmt.Sprintf(doc, "b", "{}"), fmt.Sprintf(doc, "c", "{y: [1]}")
	for _, seed := range [][3]string{
		{a + "\n---\n" + b + "\n---\n" + c, a + "\n---\n" + c, b + "\n---\n" + a + "\n---\n" + c},
		{a + "\n---\n" + b + "\n---\n" + c, a + "\n---\n" + fmt.Sprintf(doc, "b", "{z: 1}") + "\n---\n" + c, c},
		{"---\n\n---\n# c\n---\n" + a, "# c\n---\n\n---\n" + a, a + "\n---\n" + a},
		{a + "\n---\n" + a, a + "\n---\n" + b + "\n---\n" + a, "a: ["},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, first, second, third string) {
		parts := watched.NewShareTable(0)
		_, _, cache, order, err := ParseDecodings(first, nil, nil, parts, true)
		if err != nil {
			return
		}
		for _, text := range []string{second, third} {
			want, wantErr := Parse(text)
			got, from, _, _, gotErr := ParseDecodings(text, cache, order, parts, false)
			assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr))
			assert.Equal(t, want, got)
			require.Len(t, from, len(got))
			for i, d := range from {
				e := *d
				e.Index, e.Line = got[i].Index, got[i].Line
				assert.Equal(t, want[i], e, "document %d is a copy of its decoding", i)
			}
		}
	})
}

// TestAParseMissingFewDocumentsKeepsTheCache: a parse whose text has one
// document in 32 or fewer that the cache lacks returns the cache as it
// was; one missing more, or ParseCachedExact, returns the cache of its
// own documents.
func TestAParseMissingFewDocumentsKeepsTheCache(t *testing.T) {
	doc := func(i int) string {
		return fmt.Sprintf("{apiVersion: v1, kind: Service, metadata: {name: s%d}, status: {x: %d}}", i, i)
	}
	text := func(from, to int) string {
		var docs []string
		for i := from; i < to; i++ {
			docs = append(docs, doc(i))
		}
		return strings.Join(docs, "\n---\n") + "\n"
	}
	_, cache, err := ParseCached(text(0, 64), nil, nil)
	require.NoError(t, err)
	require.Len(t, cache, 64)
	_, kept, err := ParseCached(text(1, 66), cache, nil)
	require.NoError(t, err)
	assert.Equal(t, reflect.ValueOf(cache).Pointer(), reflect.ValueOf(kept).Pointer(), "two of 65 missed: the cache is kept")
	_, rebuilt, err := ParseCached(text(3, 68), cache, nil)
	require.NoError(t, err)
	assert.NotEqual(t, reflect.ValueOf(cache).Pointer(), reflect.ValueOf(rebuilt).Pointer(), "four of 65 missed: a cache of its own")
	assert.Len(t, rebuilt, 65)
	assert.Same(t, cache[doc(10)+"\n"], rebuilt[doc(10)+"\n"], "with the decodings it had")
	_, exact, err := ParseCachedExact(text(1, 66), cache, nil)
	require.NoError(t, err)
	assert.NotEqual(t, reflect.ValueOf(cache).Pointer(), reflect.ValueOf(exact).Pointer(), "ParseCachedExact: a cache of its own")
	assert.Len(t, exact, 65)
}

func TestParseCachedReusesDecodings(t *testing.T) {
	text := "{apiVersion: v1, kind: Service, metadata: {name: a}, status: {x: 1}}\n---\n{apiVersion: v1, kind: Service, metadata: {name: b}, status: {}}"
	docs, cache, err := ParseCached(text, nil, nil)
	require.NoError(t, err)
	require.Len(t, cache, 2)
	again, next, err := ParseCached("\n---\n"+text, cache, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, again[0].Line, "positions are this text's")
	assert.Equal(t, docs[1].Status, again[1].Status)
	assert.Same(t, cache[strings.SplitN(text, "\n---\n", 2)[0]], next[strings.SplitN(text, "\n---\n", 2)[0]], "the decoding was reused")
	_, failed, err := ParseCached(text+"\n---\na: [", cache, nil)
	require.Error(t, err)
	assert.Nil(t, failed, "a failed parse leaves no cache")
}

// Statuses that say the same are kept once: ten thousand routes of a
// Gateway mostly have the same status, and a decoded status is about
// 2.4 KB of maps.
func TestParseSharesEqualStatuses(t *testing.T) {
	const doc = "{apiVersion: v1, kind: Service, metadata: {namespace: d, name: %s}, status: %s}"
	status := "{parents: [{conditions: [{type: Accepted, status: 'True', observedGeneration: 1}], parentRef: {name: gw}}]}"
	parts := watched.NewShareTable(0)
	docs, _, err := ParseCached(fmt.Sprintf(doc, "a", status)+"\n---\n"+fmt.Sprintf(doc, "b", status)+"\n---\n"+fmt.Sprintf(doc, "c", "{x: 1}"), nil, parts)
	require.NoError(t, err)
	require.Len(t, docs, 3)
	assert.Equal(t, reflect.ValueOf(docs[0].Status).UnsafePointer(), reflect.ValueOf(docs[1].Status).UnsafePointer(), "one status map")
	assert.NotEqual(t, reflect.ValueOf(docs[0].Status).UnsafePointer(), reflect.ValueOf(docs[2].Status).UnsafePointer())
	later, _, err := ParseCached(fmt.Sprintf(doc, "d", status), nil, parts)
	require.NoError(t, err)
	assert.Equal(t, reflect.ValueOf(docs[0].Status).UnsafePointer(), reflect.ValueOf(later[0].Status).UnsafePointer(), "the next parse keeps it once too")
	alone, err := Parse(fmt.Sprintf(doc, "a", status))
	require.NoError(t, err)
	assert.Equal(t, alone[0].Status, later[0].Status)
}

// BenchmarkParse parses 10,000 Ingress status documents, with and without
// the decodings of an equal text.
func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "---\n{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"Ingress\",\"metadata\":{\"name\":\"app%d\",\"namespace\":\"ns%d\"},\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"203.0.113.10\"}]}}}\n", i, i%3)
	}
	text := sb.String()
	_, cache, err := ParseCached(text, nil, nil)
	require.NoError(b, err)
	for _, c := range []struct {
		name  string
		cache Cache
	}{{"decoded", nil}, {"cached", cache}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ParseCached(text, c.cache, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
