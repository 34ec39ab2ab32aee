package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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

// defaultIdentity is this process's name in the Lease and its Events: the
// host name (the pod's name in a cluster) and a random suffix.
func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "htc"
	}
	return host + "_" + string(uuid.NewUUID())
}

// leadership says whether this replica is the one that writes the config's
// status, its Events and the webhook registration. Without leader election
// it always is.
type leadership struct {
	mu      sync.Mutex
	done    *sync.Cond
	leading bool
	term    int  // incremented when a term starts
	running int  // lead calls not yet returned
	closed  bool // no term starts any more
	gauge   prometheus.Gauge
}

func newLeadership(elected bool, reg prometheus.Registerer) *leadership {
	l := &leadership{leading: !elected, gauge: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "htc_leader",
		Help: "1 when this replica is the leader (it writes the config's status, its Events and the webhook registration), else 0; 1 without leader election.",
	})}
	l.done = sync.NewCond(&l.mu)
	if l.leading {
		l.gauge.Set(1)
	}
	reg.MustRegister(l.gauge)
	return l
}

// isLeading reports whether this replica leads now.
func (l *leadership) isLeading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading
}

// lead is one term: this replica leads until ctx ends. started runs first
// (with ctx); lead returns when ctx ended and started returned.
func (l *leadership) lead(ctx context.Context, started func(context.Context)) {
	l.mu.Lock()
	if l.closed || ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	l.term++
	term := l.term
	l.leading, l.running = true, l.running+1
	l.gauge.Set(1)
	l.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.term == term {
			l.leading = false
			l.gauge.Set(0)
		}
	})
	defer func() {
		stop()
		l.mu.Lock()
		if l.term == term {
			l.leading = false
			l.gauge.Set(0)
		}
		l.running--
		l.done.Broadcast()
		l.mu.Unlock()
	}()
	started(ctx)
	<-ctx.Done()
}

// close waits for the running term to end and starts no other.
func (l *leadership) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for l.running > 0 {
		l.done.Wait()
	}
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
	c.status.resume(ctx)
	if c.registration != nil {
		c.registration.kick()
	}
	c.objStatus.kick()
}

// elect campaigns for the Lease until ctx ends, again after a lost term.
// While it leads, the status reporter and the webhook registration write;
// when ctx ends the Lease is released, so another replica takes over at
// once.
func (c *controller) elect(ctx context.Context, kube kubernetes.Interface) error {
	defer c.leader.close()
	ns := orString(c.opts.LeaderElectionNamespace, c.opts.ConfigNamespace)
	name := LeaseName(c.opts.ConfigName)
	log := c.log.With("lease", ns+"/"+name, "identity", c.identity)
	lease, renew, retry := c.opts.leaseDurations()
	cfg := leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.identity},
		},
		LeaseDuration:   lease,
		RenewDeadline:   renew,
		RetryPeriod:     retry,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				c.leader.lead(lctx, func(lctx context.Context) {
					log.Info("leading: this replica writes the config's status, its Events, the webhook registration and the status of watched objects")
					c.startedLeading(lctx)
				})
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != c.identity {
					log.Info("following", "leader", id)
				}
			},
		},
	}
	log.Info("campaigning for the leadership")
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(cfg)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			log.Warn("lost the leadership; campaigning again")
		}
	}
	return nil
}
