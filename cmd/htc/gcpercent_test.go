package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env string
		want            int
		from, err       string
	}{
		{name: "auto without GOGC", flag: "auto", want: defaultGCPercent, from: "default"},
		{name: "empty is auto", flag: "", want: defaultGCPercent, from: "default"},
		{name: "auto: GOGC wins", flag: "auto", env: "200", from: "GOGC=200"},
		{name: "auto: GOGC=off is the runtime's", flag: "auto", env: "off", from: "GOGC=off"},
		{name: "a percentage", flag: "80", env: "200", want: 80, from: "--gc-percent"},
		{name: "not a number", flag: "half", err: `--gc-percent: "half" is not a percentage from 1 to 10000, or auto`},
		{name: "zero", flag: "0", err: `--gc-percent: "0" is not a percentage`},
		{name: "too large", flag: "20000", err: `--gc-percent: "20000" is not a percentage`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := gcPercent(tc.flag, tc.env)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.from, from)
		})
	}
}
