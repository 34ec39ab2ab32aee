package main

import (
	"testing"
	"time"

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

func TestIdleMemoryReturn(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want time.Duration
		err  bool
	}{
		{flag: "15s", want: 15 * time.Second},
		{flag: "1m", want: time.Minute},
		{flag: "0", want: -1},
		{flag: "0s", want: -1},
		{flag: "1s", want: time.Second},
		{flag: "500ms", err: true},
		{flag: "-5s", err: true},
		{flag: "soon", err: true},
		{flag: "", err: true},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			got, err := idleMemoryReturn(tc.flag)
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "--idle-memory-return: ")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
