package controller

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clients are the API clients of one Run.
type clients struct {
	dyn       dynamic.Interface
	discovery discovery.DiscoveryInterface
	kube      kubernetes.Interface
	// status is the dynamic client of the object status writer, with a
	// rate limit of its own (statusQPS): writing the status of every
	// route at startup neither waits behind the informers' lists nor
	// slows them.
	status dynamic.Interface
}

// The status writer's client-side rate limit: 10,000 routes' status in
// 50 s. At 100 a second the writes alone took 100 s, and a fresh
// controller at 10,000 HTTPRoutes is ready about 23 s after its stores
// synced, so every status could not be written within issue 33's 120 s
// of the stores syncing however fast the API server answered. The API
// server's priority and fairness still decides how fast they are served;
// this only bounds what htc asks.
const (
	statusQPS   = 200
	statusBurst = 200
)

// newClients loads the kubeconfig (or uses opts.RESTConfig) and creates
// the dynamic, discovery and typed clients, and the status writer's.
func newClients(opts Options) (*clients, error) {
	restCfg := opts.RESTConfig
	if restCfg == nil {
		var err error
		if restCfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	restCfg = rest.CopyConfig(restCfg)
	if restCfg.QPS == 0 {
		restCfg.QPS, restCfg.Burst = 50, 100
	}
	restCfg.UserAgent = "htc-controller"
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	statusCfg := rest.CopyConfig(restCfg)
	statusCfg.QPS, statusCfg.Burst, statusCfg.RateLimiter = statusQPS, statusBurst, nil
	status, err := dynamic.NewForConfig(statusCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the status client: %w", err)
	}
	return &clients{dyn: dyn, discovery: dc, kube: kube, status: status}, nil
}
