package informer

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/haproxy-template/htc/pkg/watched"
)

// pagedLister serves List in pages as an API server does: Limit objects a
// page, a continue token naming the next, the snapshot's resourceVersion
// on every page. It records the options of every call.
type pagedLister struct {
	dynamic.ResourceInterface // only List is served
	objects                   []unstructured.Unstructured
	calls                     []metav1.ListOptions
}

func (p *pagedLister) List(_ context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p.calls = append(p.calls, o)
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	end := min(len(p.objects), start+int(o.Limit))
	if o.Limit == 0 {
		end = len(p.objects)
	}
	page := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceList"}}
	page.SetResourceVersion("42")
	for _, obj := range p.objects[start:end] {
		page.Items = append(page.Items, *obj.DeepCopy())
	}
	if end < len(p.objects) {
		page.SetContinue(strconv.Itoa(end))
	}
	return page, nil
}

func TestListPrunedReadsPageByPage(t *testing.T) {
	p := &pagedLister{}
	for i := range 2*listPageSize + 7 {
		s := svc("default", fmt.Sprintf("s%04d", i), strconv.Itoa(i+1))
		s.SetAnnotations(map[string]string{watched.LastAppliedAnnotation: "{}", "note": "unread"})
		p.objects = append(p.objects, *s)
	}
	keep := watched.NewKeep([][]string{{"spec", "ports"}}, nil)
	list, err := listPruned(t.Context(), p, metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, LabelSelector: "app=web"},
		keep.SharingTransform(watched.NewShareTable(0)))
	require.NoError(t, err)

	require.Len(t, p.calls, 3, "one call per page")
	for i, c := range p.calls {
		assert.Equal(t, int64(listPageSize), c.Limit, "call %d", i)
		assert.Empty(t, c.ResourceVersion, "every page from the most recent snapshot, which the cache pages")
		assert.Empty(t, c.ResourceVersionMatch)
		assert.Equal(t, "app=web", c.LabelSelector)
	}
	assert.Equal(t, []string{"", "500", "1000"}, []string{p.calls[0].Continue, p.calls[1].Continue, p.calls[2].Continue})
	require.Len(t, list.Items, len(p.objects), "nothing lost")
	assert.Equal(t, "42", list.GetResourceVersion(), "the informer watches from the list's snapshot")
	assert.Empty(t, list.GetContinue(), "one list for the informer's pager")
	for i, obj := range list.Items {
		require.Equal(t, p.objects[i].GetName(), obj.GetName())
		require.Nil(t, obj.GetAnnotations(), "%s kept what no template reads", obj.GetName())
		require.Equal(t, p.objects[i].Object["spec"], obj.Object["spec"])
	}
	// Every Service has the same ports: the informer's table keeps one copy.
	first := list.Items[0].Object["spec"].(map[string]any)["ports"].([]any)
	last := list.Items[len(list.Items)-1].Object["spec"].(map[string]any)["ports"].([]any)
	assert.Same(t, &first[0], &last[0], "identical ports are shared")
}

// A failed page fails the list (the informer lists again); a cancelled
// context stops between pages.
func TestListPrunedStops(t *testing.T) {
	p := &pagedLister{}
	for i := range listPageSize + 1 {
		p.objects = append(p.objects, *svc("default", fmt.Sprintf("s%04d", i), "1"))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := listPruned(ctx, p, metav1.ListOptions{}, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, p.calls, 1)
}
