package informer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/watched"
)

// listPageSize is how many objects one page of an informer's list holds.
// A list holds at most one page of whole objects at a time (listPruned):
// 10,000 Ingresses as the API server sends them (managedFields and the
// last-applied annotation included) decode to several hundred megabytes.
const listPageSize = 500

// prunedListWatch lists and watches ri for an informer with the label and
// field selectors of key, pruning every listed object with transform (the
// informer's, watched.Keep.SharingTransform) page by page (listPruned).
// Watched objects are pruned by the informer's transform, and so are the
// objects of a streaming list (the watch-list the informer opens first
// where the API server serves it; the paged list is its fallback).
func prunedListWatch(ri dynamic.ResourceInterface, key watched.WatchKey, transform cache.TransformFunc) *cache.ListWatch {
	selectors := func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = key.Selector, key.Fields }
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			selectors(&o)
			return listPruned(ctx, ri, o, transform)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			selectors(&o)
			return ri.Watch(ctx, o)
		},
	}
}

// listPruned lists ri with opts in pages of listPageSize objects and
// prunes each page's objects (transform, nil: none) before it reads the next, so
// the whole objects of one page at most are held at a time; it returns
// one list of them all, with the resourceVersion of the list's snapshot.
//
// Every page is read from one consistent snapshot, the most recent one:
// that is as fresh as any resourceVersion an informer asks for (the
// reflector's "0", "any", is usually served whole from the API server's
// cache, ignoring the page size).
func listPruned(ctx context.Context, ri dynamic.ResourceInterface, opts metav1.ListOptions, transform cache.TransformFunc) (*unstructured.UnstructuredList, error) {
	opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	opts.Limit, opts.Continue = listPageSize, ""
	out := &unstructured.UnstructuredList{}
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if out.Object == nil {
			out.Object = page.Object // apiVersion, kind and the snapshot's metadata
		}
		for i := range page.Items {
			if transform == nil {
				break
			}
			if _, err := transform(&page.Items[i]); err != nil {
				return nil, fmt.Errorf("pruning %s/%s: %w", page.Items[i].GetNamespace(), page.Items[i].GetName(), err)
			}
		}
		out.Items = append(out.Items, page.Items...)
		next := page.GetContinue()
		if next == "" {
			out.SetContinue("")
			out.SetRemainingItemCount(nil)
			return out, nil
		}
		opts.Continue = next
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}
