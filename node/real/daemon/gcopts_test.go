package daemon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/node/logrotate"
)

// The image GC and log rotation fields of a config file reach the
// options (flags win), the agent's configurations follow, and bad values
// are refused naming the flag or field.
func TestGCOptions(t *testing.T) {
	o, ignored := applyConfig(t, "/etc/lockstep/config.yaml", `
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
imageMaximumGCAge: 24h
containerLogMaxSize: 1Mi
containerLogMaxFiles: 3
containerLogMaxWorkers: 2
containerLogMonitorInterval: 30s
`, func(o *Options) { o.GC.ContainerLogMaxFiles = 4 }, "container-log-max-files") // the flag, which wins
	if len(ignored) != 0 {
		t.Errorf("fields reported ignored: %v", ignored)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := imagegc.Config{Policy: imagegc.Policy{HighThresholdPercent: 90, LowThresholdPercent: 70, MinAge: 5 * time.Minute, MaxAge: 24 * time.Hour}}
	if d := cmp.Diff(want, o.GC.ImageGC()); d != "" {
		t.Errorf("image GC (-want +got):\n%s", d)
	}
	lr, err := o.GC.LogRotation()
	if d := cmp.Diff(logrotate.Config{MaxSize: 1 << 20, MaxFiles: 4, Workers: 2, Interval: 30 * time.Second}, lr); d != "" || err != nil {
		t.Errorf("log rotation %v (-want +got):\n%s", err, d)
	}
	kc := o.KubeletConfiguration()
	if *kc.ImageGCHighThresholdPercent != 90 || kc.ContainerLogMaxSize != "1Mi" || *kc.ContainerLogMaxFiles != 4 {
		t.Errorf("configz: high %d, max size %s, max files %d", *kc.ImageGCHighThresholdPercent, kc.ContainerLogMaxSize, *kc.ContainerLogMaxFiles)
	}

	for _, tc := range []struct {
		edit func(*GCOptions)
		want string
	}{
		{func(g *GCOptions) { g.ImageGCLowThresholdPercent = 90 }, "LowThresholdPercent 90 can not be higher than HighThresholdPercent 85"},
		{func(g *GCOptions) { g.ImageGCHighThresholdPercent = 101 }, "must be in range [0-100]"},
		{func(g *GCOptions) { g.ContainerLogMaxFiles = 1 }, "invalid MaxFiles 1, must be > 1"},
		{func(g *GCOptions) { g.ContainerLogMaxSize = "ten" }, "container log max size"},
		{func(g *GCOptions) { g.ContainerLogMonitorInterval = time.Second }, "must be at least 3s"},
	} {
		checkValidate(t, func(o *Options) { tc.edit(&o.GC) }, tc.want)
	}
}
