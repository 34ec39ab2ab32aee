package controller

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   BuildInfo
		haproxy string
		want    string
	}{
		{"known", BuildInfo{Version: "v1.2.3", Revision: "abc123", GoVersion: "go1.25.0"}, "3.0.11-1+deb13u5",
			`htc_build_info{goversion="go1.25.0",haproxy_version="3.0.11-1+deb13u5",revision="abc123",version="v1.2.3"} 1`},
		{"unknown", BuildInfo{}, "",
			`htc_build_info{goversion="` + runtime.Version() + `",haproxy_version="unknown",revision="unknown",version="dev"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(Options{Build: tc.build}, slog.New(slog.DiscardHandler), fakeClient(), restMapper(), nil)
			c.metrics.SetBuild(tc.build.Version, tc.build.Revision, tc.build.GoVersion, tc.haproxy)
			assert.Equal(t, 1, testutil.CollectAndCount(c.metrics.BuildInfo), "one series, replaced when the HAProxy version is known")
			rec := httptest.NewRecorder()
			c.metricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			require.Equal(t, http.StatusOK, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.want)
		})
	}
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		pprof bool
		code  int
	}{
		{false, http.StatusNotFound},
		{true, http.StatusOK},
	} {
		c := newController(Options{Pprof: tc.pprof}, slog.New(slog.DiscardHandler), fakeClient(), restMapper(), nil)
		h := c.metricsHandler()
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			assert.Equal(t, tc.code, rec.Code, "pprof %v: %s", tc.pprof, path)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.True(t, strings.Contains(rec.Body.String(), "htc_haproxy_version_skew 0"), "/metrics is served either way")
	}
}
