package leader

import (
	"context"
	"fmt"
	"log/slog"
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

// DefaultIdentity is this process's name in the Lease and its Events: the
// host name (the pod's name in a cluster) and a random suffix.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "htc"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Leadership says whether this replica is the one that writes the config's
// status, its Events and the webhook registration. Without leader election
// it always is.
type Leadership struct {
	mu      sync.Mutex
	done    *sync.Cond
	leading bool
	term    int  // incremented when a term starts
	running int  // Lead calls not yet returned
	closed  bool // no term starts any more
	gauge   prometheus.Gauge
}

// New returns the leadership of this replica, registering htc_leader with
// reg: leading from the start unless elected (leader election is on).
func New(elected bool, reg prometheus.Registerer) *Leadership {
	l := &Leadership{leading: !elected, gauge: prometheus.NewGauge(prometheus.GaugeOpts{
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

// IsLeading reports whether this replica leads now.
func (l *Leadership) IsLeading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading
}

// Lead is one term: this replica leads until ctx ends. started runs first
// (with ctx); Lead returns when ctx ended and started returned.
func (l *Leadership) Lead(ctx context.Context, started func(context.Context)) {
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

// Close waits for the running term to end and starts no other.
func (l *Leadership) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for l.running > 0 {
		l.done.Wait()
	}
}

// Lease says which Lease the replicas campaign for and how.
type Lease struct {
	// Namespace and Name are the Lease's.
	Namespace, Name string
	// Identity is this replica's name in the Lease.
	Identity string
	// Duration, RenewDeadline and RetryPeriod are those of
	// leaderelection.LeaderElectionConfig.
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// Campaign campaigns for the Lease until ctx ends, again after a lost
// term; each term is a Lead of l running started. When ctx ends the Lease
// is released, so another replica takes over at once. It closes l when it
// returns.
func Campaign(ctx context.Context, kube kubernetes.Interface, lease Lease, l *Leadership, started func(context.Context), log *slog.Logger) error {
	defer l.Close()
	log = log.With("lease", lease.Namespace+"/"+lease.Name, "identity", lease.Identity)
	cfg := leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: lease.Namespace, Name: lease.Name},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: lease.Identity},
		},
		LeaseDuration:   lease.Duration,
		RenewDeadline:   lease.RenewDeadline,
		RetryPeriod:     lease.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            lease.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				l.Lead(lctx, func(lctx context.Context) {
					log.Info("leading: this replica writes the config's status, its Events, the webhook registration and the status of watched objects")
					started(lctx)
				})
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != lease.Identity {
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
