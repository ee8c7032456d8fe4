package daemon

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestKubeletConfigurationReportsTheEffectiveOptions(t *testing.T) {
	o := Defaults()
	o.MaxPods = 42
	o.SyncFrequency = 30 * time.Second
	o.RegisterWithTaints = []string{"dedicated=db:NoSchedule"}
	o.EnableProfilingHandler = false
	c := o.KubeletConfiguration()
	if c.MaxPods != 42 || c.SyncFrequency.Duration != 30*time.Second || c.Port != 10250 {
		t.Errorf("maxPods %d, syncFrequency %v, port %d; want 42, 30s, 10250", c.MaxPods, c.SyncFrequency.Duration, c.Port)
	}
	if len(c.RegisterWithTaints) != 1 || c.RegisterWithTaints[0] != (corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}) {
		t.Errorf("registerWithTaints %+v", c.RegisterWithTaints)
	}
	if *c.EnableProfilingHandler || !*c.EnableSystemLogHandler || *c.Authentication.Anonymous.Enabled {
		t.Errorf("enableProfilingHandler %v, enableSystemLogHandler %v, anonymous %v; want false, true, false",
			*c.EnableProfilingHandler, *c.EnableSystemLogHandler, *c.Authentication.Anonymous.Enabled)
	}
}
