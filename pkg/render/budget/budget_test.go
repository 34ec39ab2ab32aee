package budget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestALimitErrorNamesTheLimitAndTheFunction(t *testing.T) {
	for _, tc := range []struct {
		err  LimitError
		want string
	}{
		{LimitError{Limit: 64 << 20}, "the rendered bundle would exceed its size limit of 64 MiB"},
		{LimitError{Func: "addFile", Limit: 1 << 10}, "addFile: the rendered bundle would exceed its size limit of 1 KiB"},
		{LimitError{Func: "repeat", Value: true, Limit: 1000}, "repeat: the value would be larger than the bundle size limit of 1000 bytes"},
		{LimitError{Func: "set", Scratch: true, Limit: 4 << 20}, "set: the values this render builds would exceed 4 MiB (4 times the bundle size limit)"},
		{LimitError{Scratch: true, Limit: 4 << 20}, "the values this render builds would exceed 4 MiB (4 times the bundle size limit)"},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
	}
}

func TestABudgetRefusesWhatExceedsItsLimits(t *testing.T) {
	for _, tc := range []struct {
		name           string
		spend          func(b *Budget) error
		value, scratch bool
	}{
		{"one value larger than the bundle limit", func(b *Budget) error { return b.Charge("repeat", 101) }, true, false},
		{"values past the scratch budget", func(b *Budget) error {
			for range 4 {
				if err := b.Charge("set", 100); err != nil {
					return err
				}
			}
			return b.Charge("set", 1)
		}, false, true},
		{"a reused total past the scratch budget", func(b *Budget) error { return b.Spend("fragments", 401) }, false, true},
		{"a result that would not fit", func(b *Budget) error { return b.Fits("printf", 101) }, true, false},
		{"bundle output past the bundle limit", func(b *Budget) error {
			if err := b.ChargeBundle("", 100); err != nil {
				return err
			}
			return b.ChargeBundle("", 1)
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Budget
			b.Start(context.Background(), 100)
			defer b.End()
			err := tc.spend(&b)
			le, ok := errors.AsType[*LimitError](err)
			require.True(t, ok, "want a *LimitError, got %v", err)
			assert.Equal(t, tc.value, le.Value)
			assert.Equal(t, tc.scratch, le.Scratch)
		})
	}
}

func TestADisarmedBudgetChargesNothing(t *testing.T) {
	var b Budget
	require.NoError(t, b.Charge("repeat", 1<<62))
	require.NoError(t, b.ChargeBundle("", 1<<62))
	require.NoError(t, b.Interrupted())
}

func TestAWriterStopsOnceItsRenderIsCancelled(t *testing.T) {
	var b Budget
	ctx, cancel := context.WithCancel(context.Background())
	b.Start(ctx, 0)
	defer b.End()
	w := b.Output(nil)
	_, err := w.WriteString("before")
	require.NoError(t, err)
	cancel()
	require.Eventually(t, func() bool { return b.Interrupted() != nil }, 10*time.Second, time.Millisecond) // the AfterFunc runs on its own goroutine
	_, err = w.WriteString("after")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "before", w.String())
}

// offsets is a Tracker that keeps the offsets it is told of.
type offsets []int

func (o *offsets) Wrote(off int) { *o = append(*o, off) }

func TestOnlyTrackedOutputWritesAreToldToTheTracker(t *testing.T) {
	var b Budget
	b.Start(context.Background(), 0)
	defer b.End()
	var told offsets
	out, capture := b.Output(&told), b.Capture()
	_, _ = out.WriteString("ab")
	_, _ = out.Write([]byte("cd"))
	require.NoError(t, out.WriteUntracked("ef"))
	_, _ = out.WriteString("")
	_, _ = capture.WriteString("gh")
	assert.Equal(t, offsets{0, 2}, told)
	assert.Equal(t, "abcdef", out.String())
	assert.Equal(t, int64(DefaultMaxBytes*ScratchFactor-2), b.Scratch(), "a capture is charged to the scratch budget")
}
