package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-template/htc/pkg/config"
)

// ConditionHAProxyVersionSkew is True when the HAProxy the controller
// reloads (its master socket's `show version`) runs another version than
// the HAProxy that checks configurations (`haproxy -v`): a configuration
// the checker accepted may then fail to load or behave differently. It is
// False (reason SameVersion) when both agree, and only written when the
// controller reloads HAProxy through a master socket.
const ConditionHAProxyVersionSkew = "HAProxyVersionSkew"

// Reasons of the HAProxyVersionSkew condition.
const (
	ReasonVersionSkew = "VersionSkew"
	ReasonSameVersion = "SameVersion"
)

// checkVersionSkew compares, after a successful reload, the version the
// master says HAProxy runs with the checker's, and reports the result as
// the HAProxyVersionSkew condition (with an Event when it changes), the
// htc_haproxy_version_skew metric and, on skew, a warning in the log. An
// unknown version on either side reports nothing. mu is held.
func (l *live) checkVersionSkew(ctx context.Context, cfg *config.HAProxyTemplateConfig) {
	if l.checkerVersion == "" || l.master == nil {
		return
	}
	running, err := l.master.Version(ctx)
	if err != nil {
		l.log.Warn("reading the version of the HAProxy behind the master socket failed", "error", err)
		return
	}
	cond := versionSkewCondition(running, l.checkerVersion)
	if cond.Status == metav1.ConditionTrue {
		l.metrics.VersionSkew.Set(1)
		l.log.Warn("the HAProxy that runs the configuration is not the version that checks it", "running", running, "checker", l.checkerVersion)
	} else {
		l.metrics.VersionSkew.Set(0)
	}
	l.status.Set(ctx, cfg, cond)
}

// versionSkewCondition is the HAProxyVersionSkew condition for the version
// HAProxy runs and the checker's. Versions are compared as the text both
// print ("3.0.11-1+deb13u5"): a rebuild with another package revision is a
// skew too, since its patches may differ.
func versionSkewCondition(running, checker string) metav1.Condition {
	if running == checker {
		return metav1.Condition{Type: ConditionHAProxyVersionSkew, Status: metav1.ConditionFalse, Reason: ReasonSameVersion,
			Message: fmt.Sprintf("HAProxy %s runs the configuration and checks it (haproxy -c)", running)}
	}
	return metav1.Condition{Type: ConditionHAProxyVersionSkew, Status: metav1.ConditionTrue, Reason: ReasonVersionSkew,
		Message: fmt.Sprintf("HAProxy %s runs the configuration but HAProxy %s checks it (haproxy -c): a configuration the checker accepts may fail to load or behave differently; run the same version (the htc image's haproxy) in both", running, checker)}
}
