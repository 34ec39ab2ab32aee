package cfgstatus

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/pkg/config"
)

var configGVR = config.GroupVersion.WithResource(config.Resource)

// failsafe bounds a wait that only a broken Reporter makes long.
const failsafe = 10 * time.Second

// fixture is a Reporter over a fake API server holding the config
// htc-system/htc; its status writes can be held (hold) and made to fail.
type fixture struct {
	r       *Reporter
	dyn     *dynamicfake.FakeDynamicClient
	events  *record.FakeRecorder
	cfg     *config.HAProxyTemplateConfig
	writes  atomic.Int32  // status updates that reached the API server
	held    chan struct{} // receives when a held write starts
	release chan struct{} // closed to let held writes go on
	fail    atomic.Bool
}

func newFixture(t *testing.T, hold bool) *fixture {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc", "generation": int64(3)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configGVR: config.Kind + "List"}, u)
	f := &fixture{dyn: dyn, events: record.NewFakeRecorder(100), held: make(chan struct{}, 10), release: make(chan struct{}),
		cfg: &config.HAProxyTemplateConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "htc-system", Name: "htc", Generation: 3}}}
	if !hold {
		close(f.release)
	}
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
	})
	dyn.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		f.held <- struct{}{}
		<-f.release
		if f.fail.Load() {
			return true, nil, errors.New("the API server is away")
		}
		f.writes.Add(1)
		return false, nil, nil
	})
	f.r = New(dyn, f.events, slog.New(slog.DiscardHandler))
	return f
}

func (f *fixture) condition(t *testing.T, typ string) *metav1.Condition {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), failsafe)
	defer cancel()
	require.NoError(t, f.r.Wait(ctx))
	u, err := f.dyn.Resource(configGVR).Namespace("htc-system").Get(t.Context(), "htc", metav1.GetOptions{})
	require.NoError(t, err)
	st, err := DecodeStatus(u)
	require.NoError(t, err)
	return meta.FindStatusCondition(st.Conditions, typ)
}

func ready(status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: "because " + reason}
}

// returns reports whether f returns before failsafe.
func returns(f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(failsafe):
		return false
	}
}

func TestSetDoesNotWaitForTheWrite(t *testing.T) {
	f := newFixture(t, true)
	require.True(t, returns(func() { f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up")) }), "Set waited for the held write")
	<-f.held
	require.True(t, returns(func() { f.r.SetFailures(t.Context(), f.cfg, []config.StatusFailure{{Phase: "render", Reason: "r"}}) }),
		"SetFailures waited for the held write")
	assert.Zero(t, f.writes.Load(), "nothing written while the write is held")
	close(f.release)
	c := f.condition(t, "Ready")
	require.NotNil(t, c)
	assert.Equal(t, "Up", c.Reason)
	assert.Equal(t, int64(3), c.ObservedGeneration)
}

func TestConditionsSetDuringAWriteAreWrittenOnceAsLastSet(t *testing.T) {
	f := newFixture(t, true)
	require.True(t, returns(func() { f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "First")) }), "Set waited for the held write")
	<-f.held // the first write is under way
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionFalse, "Second"))
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Third"))
	f.r.Set(t.Context(), f.cfg, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Fine", Message: "fine"})
	close(f.release)
	c := f.condition(t, "Ready")
	require.NotNil(t, c)
	assert.Equal(t, "Third", c.Reason)
	assert.NotNil(t, f.condition(t, "Other"))
	assert.Equal(t, int32(2), f.writes.Load(), "the first write, then one for everything set during it")

	var reasons []string
	for len(f.events.Events) > 0 {
		reasons = append(reasons, <-f.events.Events)
	}
	assert.Equal(t, []string{"Normal First because First", "Warning Second because Second", "Normal Third because Third", "Normal Fine fine"}, reasons,
		"an Event for every change, none coalesced")
}

func TestAnUnchangedConditionWritesNothing(t *testing.T) {
	f := newFixture(t, false)
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up"))
	require.NotNil(t, f.condition(t, "Ready"))
	<-f.events.Events
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up"))
	require.NotNil(t, f.condition(t, "Ready"))
	assert.Equal(t, int32(1), f.writes.Load())
	assert.Empty(t, f.events.Events)
}

func TestAFailedWriteIsWrittenAgainWithTheNextSet(t *testing.T) {
	f := newFixture(t, false)
	f.fail.Store(true)
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up"))
	assert.Nil(t, f.condition(t, "Ready"), "the write failed")
	f.fail.Store(false)
	f.r.Set(t.Context(), f.cfg, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Fine", Message: "fine"})
	c := f.condition(t, "Ready")
	require.NotNil(t, c, "written again with the next set")
	assert.Equal(t, "Up", c.Reason)
}

func TestAFollowerWritesNothingUntilItLeads(t *testing.T) {
	f := newFixture(t, false)
	var leading atomic.Bool
	f.r.Leading = leading.Load
	f.r.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up"))
	f.r.SetFailures(t.Context(), f.cfg, []config.StatusFailure{{Phase: "render", Reason: "r"}})
	assert.Nil(t, f.condition(t, "Ready"))
	assert.Empty(t, f.events.Events)

	leading.Store(true)
	f.r.Resume(t.Context())
	assert.Equal(t, int32(1), f.writes.Load(), "Resume returns once written")
	c := f.condition(t, "Ready")
	require.NotNil(t, c)
	assert.Equal(t, "Up", c.Reason)
	assert.Equal(t, "Normal Up because Up", <-f.events.Events)

	// A new leader whose object already says so writes nothing again.
	r2 := New(f.dyn, f.events, slog.New(slog.DiscardHandler))
	r2.Leading = func() bool { return false }
	r2.Set(t.Context(), f.cfg, ready(metav1.ConditionTrue, "Up"))
	r2.SetFailures(t.Context(), f.cfg, []config.StatusFailure{{Phase: "render", Reason: "r"}})
	r2.Leading = nil
	r2.Resume(t.Context())
	assert.Equal(t, int32(1), f.writes.Load())
	assert.Empty(t, f.events.Events)
}
