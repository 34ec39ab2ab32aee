package main

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		name, level, format string
		wantErr             string
		debug, info, warn   bool // which records are written
		json                bool
	}{
		{name: "default", level: "info", format: "json", info: true, warn: true, json: true},
		{name: "debug text", level: "debug", format: "text", debug: true, info: true, warn: true},
		{name: "upper case level", level: "WARN", format: "json", warn: true, json: true},
		{name: "error only", level: "error", format: "text"},
		{name: "bad level", level: "trace", format: "json", wantErr: `--log-level: "trace" is not one of debug, info, warn, error`},
		{name: "bad format", level: "info", format: "logfmt", wantErr: `--log-format: "logfmt" is not one of json, text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			log, err := (&logFlags{level: tc.level, format: tc.format}).newLogger(&out)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				assert.ErrorAs(t, err, &usageError{}, "a bad flag value exits 2")
				return
			}
			require.NoError(t, err)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			assert.Equal(t, tc.debug, strings.Contains(out.String(), "msg=d") || strings.Contains(out.String(), `"msg":"d"`), "debug")
			assert.Equal(t, tc.info, strings.Contains(out.String(), "msg=i") || strings.Contains(out.String(), `"msg":"i"`), "info")
			assert.Equal(t, tc.warn, strings.Contains(out.String(), "msg=w") || strings.Contains(out.String(), `"msg":"w"`), "warn")
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line != "" {
					assert.Equal(t, tc.json, json.Valid([]byte(line)), "%q", line)
				}
			}
		})
	}
}

// After setUp, client-go's klog records reach the slog handler, and klog's
// verbose records only at --log-level debug.
func TestSetUpRoutesKlog(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() {
		slog.SetDefault(prev)
		klog.ClearLogger()
		_ = setKlogVerbosity(0)
	})
	for _, tc := range []struct {
		level   string
		verbose bool
	}{
		{"info", false},
		{"debug", true},
	} {
		t.Run(tc.level, func(t *testing.T) {
			var out strings.Builder
			_, err := (&logFlags{level: tc.level, format: "json"}).setUp(&out)
			require.NoError(t, err)
			klog.InfoS("from klog", "key", "value")
			klog.V(4).InfoS("verbose klog")
			klog.ErrorS(nil, "klog error")
			slog.Info("from the default logger")
			klog.Flush()
			assert.Contains(t, out.String(), `"msg":"from klog","key":"value"`)
			assert.Contains(t, out.String(), `"msg":"klog error"`)
			assert.Contains(t, out.String(), `"msg":"from the default logger"`)
			assert.Equal(t, tc.verbose, strings.Contains(out.String(), "verbose klog"), "%s", out.String())
		})
	}
}
