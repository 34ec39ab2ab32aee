package scale

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCPUProfileWhileSendsUntilTheProfileArrives: the harness sends one
// request after another while the controller's CPU profile is taken, and
// stops once the profile has arrived, written to its file.
func TestCPUProfileWhileSendsUntilTheProfileArrives(t *testing.T) {
	third := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" || r.URL.Query().Get("seconds") != "7" {
			http.NotFound(w, r)
			return
		}
		<-third // the profile "ends" once three requests were sent during it
		_, _ = w.Write([]byte("profile"))
	}))
	defer srv.Close()
	h := &harness{t: t, ctx: context.Background(), s: settings{profileFor: time.Minute}}
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	sent := h.cpuProfileWhile(&controllerProc{pprofURL: srv.URL + "/debug/pprof/"}, 7, file, func(k int) {
		if k == 2 {
			once.Do(func() { close(third) })
		}
	})
	if sent < 3 {
		t.Errorf("sent %d requests during the profile, want at least 3", sent)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "profile" {
		t.Errorf("profile file: %q, %v; want %q", b, err, "profile")
	}
}
