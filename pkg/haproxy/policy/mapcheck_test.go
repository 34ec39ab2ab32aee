package policy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

func TestPolicyMapFiles(t *testing.T) {
	long := "/" + strings.Repeat("a", 16*1024) + " be_victim"
	b := &bundle.Bundle{
		BaseDir: testBase,
		Config: policyCfg("    use_backend %[path,map_beg(" + testBase + "/files/paths.lst)]\n" +
			"    acl blocked src -f " + testBase + "/files/blocked.lst\n" +
			"    acl hosts req.hdr(host) -M -f " + testBase + "/files/hosts.map"),
		Maps:  map[string]string{"host.map": "a.example be_a\n" + long + "\n \n"},
		Files: map[string]string{"paths.lst": "/api be_api\n be_x\n", "blocked.lst": "10.0.0.1\n10.0.0.2 \n", "hosts.map": "h be \n"},
	}
	err := Check(b, nil)
	require.Error(t, err)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	got := map[string]bool{}
	for _, f := range pe.Findings {
		got[f.File+":"+strconv.Itoa(f.Line)] = true
		assert.NotContains(t, f.Message, testBase)
	}
	assert.Equal(t, map[string]bool{
		"maps/host.map:2": true, "files/paths.lst:2": true, "files/blocked.lst:2": true, "files/hosts.map:1": true,
	}, got)
}

func TestPolicyMapFindingsCapped(t *testing.T) {
	b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(""), Maps: map[string]string{"m": strings.Repeat(" bad\n", 1000)}}
	err := Check(b, nil)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Len(t, pe.Findings, maxMapFindings+1)
	assert.Equal(t, "maps/m: 995 more lines HAProxy would misread", pe.Findings[maxMapFindings].String())
}
