package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/haproxy-template/htc/pkg/controller/leader"
)

// Leader election defaults (those of Kubernetes' own controllers).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// LeaseName is the name of the Lease the replicas of the controller of the
// config configName elect their leader with.
func LeaseName(configName string) string { return configName + "-leader" }

// validateLeaderElection checks the leader election options.
func (o *Options) validateLeaderElection() []string {
	if !o.LeaderElection {
		return nil
	}
	lease, renew, retry := o.leaseDurations()
	switch {
	case lease <= 0 || renew <= 0 || retry <= 0:
		return []string{"the leader election durations must be positive"}
	case lease <= renew:
		return []string{fmt.Sprintf("the lease duration (%s) must be longer than the renew deadline (%s)", lease, renew)}
	case float64(renew) <= leaderelection.JitterFactor*float64(retry):
		return []string{fmt.Sprintf("the renew deadline (%s) must be longer than %.1f times the retry period (%s)", renew, leaderelection.JitterFactor, retry)}
	}
	return nil
}

// leaseDurations returns the lease duration, renew deadline and retry
// period, defaults in place of zeros.
func (o *Options) leaseDurations() (lease, renew, retry time.Duration) {
	return orDuration(o.LeaseDuration, DefaultLeaseDuration), orDuration(o.RenewDeadline, DefaultRenewDeadline),
		orDuration(o.RetryPeriod, DefaultRetryPeriod)
}

// newStatusUpdates returns htc_status_updates_total, registered with reg.
func newStatusUpdates(reg prometheus.Registerer) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "htc_status_updates_total",
		Help: "Updates of the config's status by result: written, unchanged (the object already said so), error, not_leader (a follower keeps it for when it leads).",
	}, []string{"result"})
	reg.MustRegister(v)
	return v
}

// startedLeading writes what a follower only kept: the config's status,
// the webhook registration, the status of watched objects.
func (c *controller) startedLeading(ctx context.Context) {
	c.status.Resume(ctx)
	if c.registration != nil {
		c.registration.Kick()
	}
	c.objStatus.Kick()
}

// elect campaigns for the Lease until ctx ends (leader.Campaign): while
// it leads, the status reporter and the webhook registration write.
func (c *controller) elect(ctx context.Context, kube kubernetes.Interface) error {
	lease, renew, retry := c.opts.leaseDurations()
	return leader.Campaign(ctx, kube, leader.Lease{
		Namespace: orString(c.opts.LeaderElectionNamespace, c.opts.ConfigNamespace), Name: LeaseName(c.opts.ConfigName),
		Identity: c.identity, Duration: lease, RenewDeadline: renew, RetryPeriod: retry,
	}, c.leader, c.startedLeading, c.log)
}
