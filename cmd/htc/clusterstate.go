package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// listPageSize is how many objects one list call asks for.
const listPageSize = 500

// loadCluster lists every object of the config's watched resources from
// the cluster of the kubeconfig (empty: client-go's default loading
// rules, KUBECONFIG then ~/.kube/config; kubeContext empty: its current
// context) into the stores, page by page. It only lists: nothing is
// written to the cluster.
func (o *offline) loadCluster(ctx context.Context, kubeconfig, kubeContext string) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	client, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	listed := map[schema.GroupVersionResource]bool{}
	for _, r := range o.pipeline.Model.All() {
		if listed[r.GVR] {
			continue
		}
		listed[r.GVR] = true
		opts := metav1.ListOptions{Limit: listPageSize}
		for {
			list, err := client.Resource(r.GVR).List(ctx, opts)
			if err != nil {
				if ctx.Err() != nil {
					return errInterrupted
				}
				return fmt.Errorf("listing %s: %w", r.GVR.GroupResource(), err)
			}
			for i := range list.Items {
				if _, err := o.pipeline.Model.Add(o.stores, r.GVR, &list.Items[i]); err != nil {
					return fmt.Errorf("%s %s/%s: %w", r.GVR.GroupResource(), list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
				}
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return nil
}
