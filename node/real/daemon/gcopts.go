package daemon

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/node/logrotate"
)

// GCOptions are the image garbage collection and container log rotation
// options, named as the kubelet's.
type GCOptions struct {
	// ImageGCHighThresholdPercent (--image-gc-high-threshold,
	// imageGCHighThresholdPercent): the image filesystem usage that starts
	// a collection; 100 turns it off.
	ImageGCHighThresholdPercent int32
	// ImageGCLowThresholdPercent (--image-gc-low-threshold,
	// imageGCLowThresholdPercent): the usage a collection aims at.
	ImageGCLowThresholdPercent int32
	// ImageMinimumGCAge (--minimum-image-ttl-duration, imageMinimumGCAge).
	ImageMinimumGCAge time.Duration
	// ImageMaximumGCAge (imageMaximumGCAge): unused images older than it
	// go whatever the usage; 0 turns it off.
	ImageMaximumGCAge time.Duration
	// PodInfraContainerImage (--pod-infra-container-image) is the
	// runtime's sandbox image, never collected even when the runtime
	// does not pin it (containerd before 1.7).
	PodInfraContainerImage string
	// ContainerLogMaxSize (--container-log-max-size, containerLogMaxSize):
	// a quantity such as 10Mi.
	ContainerLogMaxSize string
	// ContainerLogMaxFiles (--container-log-max-files, containerLogMaxFiles).
	ContainerLogMaxFiles int32
	// ContainerLogMaxWorkers (--container-log-max-workers,
	// containerLogMaxWorkers).
	ContainerLogMaxWorkers int32
	// ContainerLogMonitorInterval (--container-log-monitor-interval,
	// containerLogMonitorInterval).
	ContainerLogMonitorInterval time.Duration
}

// DefaultGCOptions are the kubelet's defaults.
func DefaultGCOptions() GCOptions {
	return GCOptions{
		ImageGCHighThresholdPercent: imagegc.DefaultHighThresholdPercent,
		ImageGCLowThresholdPercent:  imagegc.DefaultLowThresholdPercent,
		ImageMinimumGCAge:           imagegc.DefaultMinAge,
		ContainerLogMaxSize:         "10Mi",
		ContainerLogMaxFiles:        logrotate.DefaultMaxFiles,
		ContainerLogMaxWorkers:      logrotate.DefaultWorkers,
		ContainerLogMonitorInterval: logrotate.DefaultInterval,
	}
}

// ImageGC is the collector's configuration.
func (g GCOptions) ImageGC() imagegc.Config {
	c := imagegc.Config{Policy: imagegc.Policy{
		HighThresholdPercent: int(g.ImageGCHighThresholdPercent), LowThresholdPercent: int(g.ImageGCLowThresholdPercent),
		MinAge: g.ImageMinimumGCAge, MaxAge: g.ImageMaximumGCAge,
	}}
	if g.PodInfraContainerImage != "" {
		c.SandboxImages = []string{g.PodInfraContainerImage}
	}
	return c
}

// LogRotation is the log rotation policy.
func (g GCOptions) LogRotation() (logrotate.Config, error) {
	q, err := resource.ParseQuantity(g.ContainerLogMaxSize)
	if err != nil {
		return logrotate.Config{}, fmt.Errorf("container log max size %q: %w", g.ContainerLogMaxSize, err)
	}
	size, ok := q.AsInt64()
	if !ok {
		return logrotate.Config{}, fmt.Errorf("container log max size %q: out of range", g.ContainerLogMaxSize)
	}
	if size == 0 {
		size = -1 // 0 turns rotation off (logrotate's zero is its default)
	}
	c := logrotate.Config{MaxSize: size, MaxFiles: int(g.ContainerLogMaxFiles), Workers: int(g.ContainerLogMaxWorkers), Interval: g.ContainerLogMonitorInterval}
	return c, c.Validate()
}

// validateGC checks the options, naming the flag at fault.
func (o *Options) validateGC(bad badOption) error {
	g := o.GC
	if err := g.ImageGC().Policy.Validate(); err != nil {
		return bad("image-gc-high-threshold", fmt.Sprintf("%d/%d", g.ImageGCHighThresholdPercent, g.ImageGCLowThresholdPercent), err.Error())
	}
	if _, err := g.LogRotation(); err != nil {
		return bad("container-log-max-size", g.ContainerLogMaxSize+fmt.Sprintf(" (max files %d)", g.ContainerLogMaxFiles), err.Error())
	}
	if g.ContainerLogMaxWorkers < 1 {
		return bad("container-log-max-workers", g.ContainerLogMaxWorkers, "must be 1 or more")
	}
	if g.ContainerLogMonitorInterval < 3*time.Second {
		return bad("container-log-monitor-interval", g.ContainerLogMonitorInterval, "must be at least 3s")
	}
	return nil
}

// applyGC takes the image GC and log rotation fields of a configuration
// file (flags win).
func applyGC(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("imageGCHighThresholdPercent", "image-gc-high-threshold", func() {
		if c.ImageGCHighThresholdPercent != nil {
			o.GC.ImageGCHighThresholdPercent = *c.ImageGCHighThresholdPercent
		}
	})
	set("imageGCLowThresholdPercent", "image-gc-low-threshold", func() {
		if c.ImageGCLowThresholdPercent != nil {
			o.GC.ImageGCLowThresholdPercent = *c.ImageGCLowThresholdPercent
		}
	})
	set("imageMinimumGCAge", "minimum-image-ttl-duration", func() { o.GC.ImageMinimumGCAge = c.ImageMinimumGCAge.Duration })
	set("imageMaximumGCAge", "image-maximum-gc-age", func() { o.GC.ImageMaximumGCAge = c.ImageMaximumGCAge.Duration })
	set("containerLogMaxSize", "container-log-max-size", func() { o.GC.ContainerLogMaxSize = c.ContainerLogMaxSize })
	set("containerLogMaxFiles", "container-log-max-files", func() {
		if c.ContainerLogMaxFiles != nil {
			o.GC.ContainerLogMaxFiles = *c.ContainerLogMaxFiles
		}
	})
	set("containerLogMaxWorkers", "container-log-max-workers", func() {
		if c.ContainerLogMaxWorkers != nil {
			o.GC.ContainerLogMaxWorkers = *c.ContainerLogMaxWorkers
		}
	})
	set("containerLogMonitorInterval", "container-log-monitor-interval", func() {
		if c.ContainerLogMonitorInterval != nil {
			o.GC.ContainerLogMonitorInterval = c.ContainerLogMonitorInterval.Duration
		}
	})
}
