package redact

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq1w2e3r4t5y6u7i8o9p0\n-----END PRIVATE KEY-----\n"

func secret(data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "data": d,
		"metadata": map[string]any{"name": "tls", "namespace": "a"}}}
}

func TestRedactsSecretData(t *testing.T) {
	r := NewBuilder().AddSecret(secret(map[string]string{"tls.key": pem, "password": "hunter2-long"})).Build()
	b64 := base64.StdEncoding.EncodeToString([]byte(pem))
	for name, in := range map[string]string{
		"whole decoded":   "fail: " + pem,
		"one line":        "bad key MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7 in line 3",
		"base64 as is":    "value " + b64 + " refused",
		"short line":      "q1w2e3r4t5y6u7i8o9p0",
		"password":        "password=hunter2-long;",
		"two in a row":    "hunter2-longhunter2-long",
		"at the very end": "x hunter2-long",
	} {
		t.Run(name, func(t *testing.T) {
			got := r.String(in)
			assert.Contains(t, got, Mask)
			for _, leak := range []string{"MIIEvQIBADAN", "hunter2-long", b64[:20], "q1w2e3r4t5y6u7i8o9p0"} {
				assert.NotContains(t, got, leak)
			}
		})
	}
	assert.Equal(t, "Service 'api' not found", r.String("Service 'api' not found"), "other text is untouched")
	assert.Equal(t, []string{"ok", Mask}, r.Strings([]string{"ok", "hunter2-long"}))
	assert.Nil(t, r.Strings(nil))
}

func TestRedactsValuesAndLines(t *testing.T) {
	r := NewBuilder().Add("/tmp/htc-controller-1234", "host-7.example.internal", "abc", "multi\nline-secret-1\nline-secret-2").Build()
	assert.Equal(t, "open "+Mask+"/maps/x: no such file", r.String("open /tmp/htc-controller-1234/maps/x: no such file"))
	assert.Equal(t, "on "+Mask, r.String("on host-7.example.internal"))
	assert.Equal(t, "abc stays (shorter than MinLen)", r.String("abc stays (shorter than MinLen)"))
	assert.Equal(t, "x "+Mask+" y", r.String("x line-secret-2 y"), "each line of a multi-line value")
	// The longest value at a position wins.
	r = NewBuilder().Add("secret", "secret-and-more").Build()
	assert.Equal(t, Mask+"!", r.String("secret-and-more!"))
}

func TestNilAndEmptyRedactNothing(t *testing.T) {
	var r *Redactor
	assert.True(t, r.Empty())
	assert.Equal(t, "x", r.String("x"))
	assert.True(t, NewBuilder().Build().Empty())
	assert.True(t, NewBuilder().AddSecret(&unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"a": "bbbbbbbbbb"}}}).Build().Empty())
}

// Linear time: a long text with many near-misses scans once.
func BenchmarkString(b *testing.B) {
	bld := NewBuilder()
	for i := range 10000 {
		bld.Add(strings.Repeat("k", 10) + string(rune('a'+i%26)) + strings.Repeat("v", i%50))
	}
	r := bld.Build()
	text := strings.Repeat("kkkkkkkkkkz ", 400)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(text)
	}
}

func TestProcessValues(t *testing.T) {
	t.Setenv("PLANTED_TOKEN", "tok-9f8e7d6c5b")
	t.Setenv("HTC_CONFIG_NAMESPACE", "htc-system")
	vals := ProcessValues("/tmp/htc-controller-777")
	assert.Contains(t, vals, "tok-9f8e7d6c5b")
	assert.Contains(t, vals, "/tmp/htc-controller-777")
	assert.NotContains(t, vals, "htc-system", "the controller's own settings are not secrets")
	host, err := os.Hostname()
	if err == nil {
		assert.Equal(t, []string{host}, ProcessWords())
	}
	r := NewBuilder().Add(vals...).Build()
	assert.Equal(t, "token "+Mask, r.String("token tok-9f8e7d6c5b"))
}

func TestWordsAreRedactedWhole(t *testing.T) {
	r := NewBuilder().AddWord("vm").Build()
	assert.Equal(t, "no peer named '"+Mask+"'", r.String("no peer named 'vm'"))
	assert.Equal(t, Mask+" and "+Mask, r.String("vm and vm"))
	assert.Equal(t, "vmware vm-1 a.vm", r.String("vmware vm-1 a.vm"), "only whole words")
	assert.False(t, r.Empty())
}
