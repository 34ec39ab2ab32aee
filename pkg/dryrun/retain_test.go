package dryrun_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
)

// After admissions, the pipeline's caches keep their proposals' changed
// files alive (the file digests, each output's last text, the parse
// outcomes, policy scans and clean maps of the checker); Retain(live)
// makes them forget those, so that at rest only the live bundle's texts
// stay, and a proposal checked again gets the same verdict.
func TestRetainLetsTheProposalsTextsGo(t *testing.T) {
	p := pipelineFor(t, noHAProxyTests, testEnv(t))
	ctx := context.Background()
	services := make([]string, 300) // haproxy.cfg and the map above the digests' 4 KiB
	for i := range services {
		services[i] = svc(t, fmt.Sprintf("a-service-of-a-longer-name-%03d", i), "")
	}
	live, _ := p.CheckWith(ctx, storesWith(t, p, services...), dryrun.CheckOptions{})
	require.True(t, live.Passed(), live.Reason)
	proposal := append(services[:len(services):len(services)], svc(t, "the-proposed-one", ""))
	cfg, names, hash := proposed(t, p, proposal)

	runtime.GC()
	runtime.GC()
	require.NotNil(t, cfg.Value(), "the caches keep the proposal's haproxy.cfg")
	require.NotNil(t, names.Value(), "and its changed map")

	p.Retain(live.Bundle)
	runtime.GC()
	runtime.GC()
	assert.Nil(t, cfg.Value(), "the proposal's haproxy.cfg was collected")
	assert.Nil(t, names.Value(), "its changed map was collected")

	again, _ := p.CheckWith(ctx, storesWith(t, p, proposal...), dryrun.CheckOptions{})
	require.True(t, again.Passed(), again.Reason)
	assert.Equal(t, hash, again.BundleHash, "the proposal is checked as before")

	var wg sync.WaitGroup // an idle return's Retain beside admissions
	for g := range 3 {
		wg.Go(func() {
			for i := range 10 {
				if g == 0 {
					p.Retain([]*bundle.Bundle{live.Bundle, nil}[i%2])
					continue
				}
				v, _ := p.CheckWith(ctx, storesWith(t, p, proposal...), dryrun.CheckOptions{})
				assert.True(t, v.Passed(), v.Reason)
				assert.Equal(t, hash, v.BundleHash)
			}
		})
	}
	wg.Wait()
	runtime.KeepAlive(live)
}

// proposed checks the Services of proposal with p and returns weak
// pointers to its bundle's haproxy.cfg and names.map, and its hash.
//
//go:noinline
func proposed(t *testing.T, p *dryrun.Pipeline, proposal []string) (cfg, names weak.Pointer[byte], hash string) {
	v, _ := p.CheckWith(context.Background(), storesWith(t, p, proposal...), dryrun.CheckOptions{})
	require.True(t, v.Passed(), v.Reason)
	return weak.Make(unsafe.StringData(v.Bundle.Config)), weak.Make(unsafe.StringData(v.Bundle.Maps["names.map"])), v.BundleHash
}
