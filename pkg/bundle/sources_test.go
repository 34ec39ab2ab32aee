package bundle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSources(t *testing.T) {
	ing := ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "web"}
	ing2 := ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "api"}
	svc := ObjectRef{Store: "services", Kind: "Service", Namespace: "a", Name: "web"}
	sec := ObjectRef{Store: "secrets", Kind: "Secret", Namespace: "a", Name: "tls"}
	s := &Sources{
		Objects: []ObjectRef{ing, svc, sec, ing2},
		Lines:   map[string][]int32{"haproxy.cfg": {0, 1, 1, 2, 0}},
		Files:   map[string]int32{"certs/a_tls.pem": 3},
		Reads:   []Read{{1, 2}, {1, 3}, {4, 2}, {1, 2}},
	}
	got, ok := s.LineObject("haproxy.cfg", 2)
	assert.True(t, ok)
	assert.Equal(t, ing, got)
	got, _ = s.LineObject("haproxy.cfg", 4)
	assert.Equal(t, svc, got)
	_, ok = s.LineObject("haproxy.cfg", 1)
	assert.False(t, ok, "a line no object wrote")
	_, ok = s.LineObject("haproxy.cfg", 99)
	assert.False(t, ok)
	got, ok = s.LineObject("certs/a_tls.pem", 7)
	assert.True(t, ok)
	assert.Equal(t, sec, got, "a file added for an object is that object's, whatever the line")

	assert.Equal(t, []ObjectRef{ing2, ing}, s.Readers(svc))
	assert.Equal(t, []ObjectRef{ing}, s.Readers(sec))
	assert.Empty(t, s.Readers(ing))
	var none *Sources
	assert.Empty(t, none.Readers(svc))
	_, ok = none.LineObject("haproxy.cfg", 1)
	assert.False(t, ok)

	assert.Equal(t, "Ingress a/web", ing.String())
	assert.Equal(t, "Namespace default", ObjectRef{Kind: "Namespace", Name: "default"}.String())
	assert.Equal(t, "object x", ObjectRef{Name: "x"}.String())
}
