package daemon

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/node/shutdown"
)

// ShutdownGroup is one entry of shutdownGracePeriodByPodPriority: pods of
// at least Priority (and below the next entry's) get GracePeriodSeconds.
type ShutdownGroup struct {
	Priority           int32
	GracePeriodSeconds int64
}

// validateModes checks the start-up mode and shutdown options.
func (o *Options) validateModes(bad badOption) error {
	switch {
	case o.NodeStatusMaxImages < -1:
		return bad("node-status-max-images", o.NodeStatusMaxImages, "must be -1 (no cap) or more")
	case o.NodeStatusMaxImages == 0:
		return bad("node-status-max-images", o.NodeStatusMaxImages, "0 (report no images) is not supported by lockstep; use -1 (no cap) or a positive number")
	case o.ShutdownGracePeriod < 0:
		return bad("shutdown-grace-period", o.ShutdownGracePeriod, "must be 0 (off) or a positive duration")
	case o.ShutdownGracePeriodCriticalPods < 0 || o.ShutdownGracePeriodCriticalPods > o.ShutdownGracePeriod:
		return bad("shutdown-grace-period-critical-pods", o.ShutdownGracePeriodCriticalPods, "must be between 0 and shutdownGracePeriod")
	case len(o.ShutdownGracePeriodByPodPriority) > 0 && (o.ShutdownGracePeriod > 0 || o.ShutdownGracePeriodCriticalPods > 0):
		return bad("shutdown-grace-period-by-pod-priority", o.ShutdownGracePeriodByPodPriority, "cannot be set together with shutdownGracePeriod or shutdownGracePeriodCriticalPods")
	case o.RunOnce && o.Kubeconfig != "":
		return bad("runonce", true, "runs without an apiserver: drop --kubeconfig")
	case o.RunOnce && o.ManifestPath == "" && o.ManifestURL == "":
		return bad("runonce", true, "needs static pods: give --pod-manifest-path or --manifest-url")
	}
	for _, g := range o.ShutdownGracePeriodByPodPriority {
		if g.GracePeriodSeconds < 0 {
			return bad("shutdown-grace-period-by-pod-priority", o.ShutdownGracePeriodByPodPriority, "grace periods must be 0 or more")
		}
	}
	if o.ManifestURL != "" {
		u, err := url.Parse(o.ManifestURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("manifest-url", o.ManifestURL, "must be an http:// or https:// URL")
		}
	}
	return nil
}

// ShutdownGroups are the pods' shutdown groups the options ask for, lowest
// priority first (nil: graceful node shutdown is off).
func (o *Options) ShutdownGroups() []shutdown.Group {
	if len(o.ShutdownGracePeriodByPodPriority) > 0 {
		out := make([]shutdown.Group, 0, len(o.ShutdownGracePeriodByPodPriority))
		for _, g := range o.ShutdownGracePeriodByPodPriority {
			out = append(out, shutdown.Group{Priority: g.Priority, GracePeriod: time.Duration(g.GracePeriodSeconds) * time.Second})
		}
		slices.SortStableFunc(out, func(a, b shutdown.Group) int { return int(a.Priority) - int(b.Priority) })
		return out
	}
	return shutdown.GroupsFor(o.ShutdownGracePeriod, o.ShutdownGracePeriodCriticalPods)
}

// ParseURLHeaders reads one --manifest-url-header value: comma-separated
// "Name:value" pairs; a name given twice keeps both values in order.
func ParseURLHeaders(s string, into map[string][]string) error {
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%q: want Name:value", kv)
		}
		into[k] = append(into[k], strings.TrimSpace(v))
	}
	return nil
}
