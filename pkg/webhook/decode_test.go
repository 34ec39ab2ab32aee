package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeHeadCorpus: objects whose head decodeHead must read as
// decodeObject does, and JSON both must refuse.
var decodeHeadCorpus = []string{
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"b","labels":{"x":"y"},"generation":3},"spec":{"ports":[{"port":80}]}}`,
	`{"spec":{"a":[1,2,{"b":null}],"c":"\u0000\"}"},"metadata":{"name":"a"},"kind":"K","apiVersion":"g/v1"}`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"kind":"L"}`,
	`{"apiVersion":"v1","kind":"K","metadata":null}`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}} x`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}   `,
	`{"apiVersion":1,"kind":"K"}`,
	`{"apiVersion":"v1","kind":"K","metadata":[]}`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"spec":{"x":1e400}}`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"spec":{"x":01}}`,
	`{"apiVersion":"v1","kind":"K","metadata":{"name":"` + "\xff" + `"}}`,
	`{"apiVersion":"v1","kind":"K","spec":"` + "\xff" + `"}`,
	`["a"]`, `"a"`, `1`, `true`, `{`, `{"a":}`, `{"apiVersion":"v1","kind":"K",}`,
	`{"apiVersion":"v1"}`, `{"kind":"K"}`, `{}`,
}

// headAgrees fails when decodeHead and decodeObject disagree about raw:
// one refuses what the other reads, or the heads differ. The one
// difference allowed: outside the head, decodeHead skips a number that
// decodeObject cannot hold in a float64 (1e400); the validator that
// decodes the rest meets it (config.FromJSON refuses it).
func headAgrees(t *testing.T, raw []byte) {
	want, wantErr := decodeObject(raw)
	got, gotErr := decodeHead(raw)
	if wantErr != nil && gotErr == nil && strings.Contains(wantErr.Error(), "cannot unmarshal number") {
		return
	}
	require.Equal(t, wantErr == nil, gotErr == nil, "decodeObject: %v; decodeHead: %v; of %q", wantErr, gotErr, raw)
	if wantErr != nil {
		return
	}
	head := map[string]any{}
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := want.Object[k]; ok {
			head[k] = v
		}
	}
	require.Equal(t, head, got.Object, "of %q", raw)
}

func TestDecodeHeadReadsTheHeadOfDecodeObject(t *testing.T) {
	for _, raw := range decodeHeadCorpus {
		headAgrees(t, []byte(raw))
	}
}

func FuzzDecodeHeadReadsTheHeadOfDecodeObject(f *testing.F) {
	for _, raw := range decodeHeadCorpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(headAgrees)
}

// TestReadBodyReadsTheWholeBody: the body is read whole whatever length
// the request declares; with its own length, into one buffer that never
// grew.
func TestReadBodyReadsTheWholeBody(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"0123456789"}`), 20000)
	for _, tt := range []struct {
		name     string
		declared int64
	}{
		{"its length", int64(len(body))},
		{"none (chunked)", -1},
		{"shorter than the body", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
			req.ContentLength = tt.declared
			got, err := readBody(httptest.NewRecorder(), req)
			require.NoError(t, err)
			assert.Equal(t, body, got)
			if tt.declared == int64(len(body)) {
				assert.Equal(t, len(body)+bytes.MinRead, cap(got), "one buffer of the declared length")
			}
		})
	}
}
