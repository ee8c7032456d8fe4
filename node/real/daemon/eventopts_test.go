package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The event client's limits come from eventRecordQPS and eventBurst of a
// config file (the flags win), default to the kubelet's 50/100, and bad
// values are refused naming the flag.
func TestEventOptions(t *testing.T) {
	if o := Defaults(); o.EventQPS != 50 || o.EventBurst != 100 {
		t.Errorf("defaults event QPS %d burst %d, want 50 and 100", o.EventQPS, o.EventBurst)
	}
	o, ignored := applyConfig(t, "/etc/lockstep/config.yaml", `
eventRecordQPS: 0
eventBurst: 7
`, func(o *Options) { o.EventBurst = 9 }, "event-burst")
	if len(ignored) != 0 {
		t.Errorf("fields reported ignored: %v", ignored)
	}
	got := [2]int32{o.EventQPS, o.EventBurst}
	if d := cmp.Diff([2]int32{0, 9}, got); d != "" {
		t.Errorf("event QPS and burst (-want +got):\n%s", d)
	}
	checkValidate(t, func(o *Options) { o.EventQPS = -1; o.SetOrigin("event-qps", "--event-qps") }, "invalid --event-qps=-1: must be 0 or more")
	checkValidate(t, func(o *Options) { o.EventBurst = -1; o.SetOrigin("event-burst", "--event-burst") }, "invalid --event-burst=-1: must be 0 or more")
}
