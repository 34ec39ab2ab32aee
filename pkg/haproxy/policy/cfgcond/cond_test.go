package cfgcond

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

func TestEvalCondition(t *testing.T) {
	for _, tc := range cfgcondtest.Cases {
		cond := cfgtext.TokenizeEnv(".if "+tc.Cond, cfgtext.EnvExact, nil)
		got := Eval(Text(cond), cfgcondtest.Version)
		assert.Equal(t, tc.Want, "FTEU"[got.Value:got.Value+1], "%q: %+v", tc.Cond, got)
		if got.Value >= Error {
			assert.NotEmpty(t, got.Reason, tc.Cond)
		}
	}
}

func TestEvalConditionWithoutVersion(t *testing.T) {
	for _, cond := range []string{"version_atleast(3.0)", "!version_before(3.0)", "1 && version_before(4)"} {
		got := Eval(cond, "")
		assert.Equal(t, Unknown, got.Value, cond)
		assert.True(t, got.NeedVersion, cond)
	}
	assert.Equal(t, False, Eval("0 && version_atleast(3.0)", "").Value)
}

func TestConditionDepth(t *testing.T) {
	for _, tc := range cfgcondtest.DepthCases() {
		got := Eval(tc.Cond, "")
		assert.Equal(t, tc.Want, "FTEU"[got.Value:got.Value+1], "%.20s… (%d bytes)", tc.Cond, len(tc.Cond))
	}
}

func TestCStrtol(t *testing.T) {
	tests := []struct {
		in       string
		base     int
		val      int64
		consumed int
	}{
		{"12x", 0, 12, 2}, {"  -7", 0, -7, 4}, {"0x1f", 0, 31, 4}, {"0x", 0, 0, 1}, {"0xg", 0, 0, 1},
		{"017", 0, 15, 3}, {"09", 0, 0, 1}, {"x", 0, 0, 0}, {"+", 0, 0, 0}, {"", 0, 0, 0},
		{"9223372036854775807", 10, 9223372036854775807, 19},
		{"9223372036854775808", 10, 9223372036854775807, 19},
		{"-9223372036854775808", 10, -9223372036854775808, 20},
		{"-99999999999999999999", 10, -9223372036854775808, 21},
		{"\n\v 5", 10, 5, 4}, {"011", 10, 11, 3},
	}
	for _, tt := range tests {
		v, end := cStrtol(tt.in, 0, tt.base)
		assert.Equal(t, tt.val, v, "%q", tt.in)
		assert.Equal(t, tt.consumed, end, "%q", tt.in)
	}
}

func TestSplitVersion(t *testing.T) {
	// The table of split_version's comment (src/haproxy.c), and more.
	tests := []struct {
		v    string
		want [versionElts]uint32
		ok   bool
	}{
		{"1.2.1-pre2", [7]uint32{1, 2, 1, 0, 2, 2, 0}, true},
		{"1.2.1", [7]uint32{1, 2, 1, 0, 3, 0, 0}, true},
		{"1.2.10.1", [7]uint32{1, 2, 10, 1, 3, 0, 0}, true},
		{"1.3.16-rc1", [7]uint32{1, 3, 16, 0, 2, 1, 0}, true},
		{"1.4-dev3", [7]uint32{1, 4, 0, 0, 1, 3, 0}, true},
		{"1.5-dev18-43", [7]uint32{1, 5, 0, 0, 1, 18, 43}, true},
		{"2.4-dev18-f6818d-20", [7]uint32{2, 4, 0, 0, 1, 18, 20}, true},
		{"3.0.11-1+deb13u5", [7]uint32{3, 0, 11, 0, 3, 0, 0}, true},
		{"3.0.11-1", [7]uint32{3, 0, 11, 0, 3, 0, 1}, true},
		{"-1", [7]uint32{0xffffffff, 0, 0, 0, 3, 0, 0}, true},
		{"1.2.3.4.5", [7]uint32{1, 2, 3, 4, 3, 0, 0}, false},
		{"1-", [7]uint32{1, 0, 0, 0, 3, 0, 0}, true},
		{"1-x-", [7]uint32{1, 0, 0, 0, 3, 0, 0}, false},
		{"x", [7]uint32{0, 0, 0, 0, 3, 0, 0}, false},
		{"", [7]uint32{0, 0, 0, 0, 3, 0, 0}, false},
	}
	for _, tt := range tests {
		got, ok := splitVersion(tt.v)
		assert.Equal(t, tt.ok, ok, tt.v)
		if ok {
			assert.Equal(t, tt.want, got, tt.v)
		}
	}
	assert.Equal(t, -2, compareVersion("x", "3.0"))
	assert.Equal(t, -3, compareVersion("3.0", "x"))
}
