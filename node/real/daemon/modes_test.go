package daemon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/shutdown"
)

// TestModesFromConfigFile: the start-up mode and shutdown fields of a
// KubeletConfiguration reach the options, and /configz reports them.
func TestModesFromConfigFile(t *testing.T) {
	o, ignored := applyConfig(t, "/c.yaml", `
staticPodURL: http://10.0.0.1:8080/pods
staticPodURLHeader:
  Authorization: ["Bearer t"]
  X-A: ["1", "2"]
httpCheckFrequency: 30s
nodeStatusMaxImages: -1
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s
`, nil)
	if len(ignored) != 0 {
		t.Errorf("ignored %v, want every field honoured", ignored)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	type view struct {
		URL       string
		Header    map[string][]string
		Every     time.Duration
		MaxImages int32
		Groups    []shutdown.Group
	}
	want := view{"http://10.0.0.1:8080/pods", map[string][]string{"Authorization": {"Bearer t"}, "X-A": {"1", "2"}}, 30 * time.Second, -1,
		[]shutdown.Group{{Priority: 0, GracePeriod: 20 * time.Second}, {Priority: podutil.SystemCriticalPriority, GracePeriod: 10 * time.Second}}}
	got := view{o.ManifestURL, o.ManifestURLHeader, o.HTTPCheckFrequency, o.NodeStatusMaxImages, o.ShutdownGroups()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	kc := o.KubeletConfiguration()
	if kc.StaticPodURL != want.URL || kc.ShutdownGracePeriod.Duration != 30*time.Second || *kc.NodeStatusMaxImages != -1 {
		t.Errorf("configz: staticPodURL %q, shutdownGracePeriod %v, nodeStatusMaxImages %d", kc.StaticPodURL, kc.ShutdownGracePeriod, *kc.NodeStatusMaxImages)
	}
}

func TestShutdownGroupsByPriority(t *testing.T) {
	o := Defaults()
	o.ShutdownGracePeriodByPodPriority = []ShutdownGroup{{Priority: 100000, GracePeriodSeconds: 5}, {Priority: 0, GracePeriodSeconds: 20}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []shutdown.Group{{Priority: 0, GracePeriod: 20 * time.Second}, {Priority: 100000, GracePeriod: 5 * time.Second}}
	if diff := cmp.Diff(want, o.ShutdownGroups()); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if got := Defaults(); got.ShutdownGroups() != nil {
		t.Errorf("default groups %v, want none (off)", got.ShutdownGroups())
	}
}

func TestInvalidModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"max images", func(o *Options) { o.NodeStatusMaxImages = -2 }, "invalid default node-status-max-images=-2: must be -1 (no cap) or more"},
		{"critical above total", func(o *Options) {
			o.ShutdownGracePeriod, o.ShutdownGracePeriodCriticalPods = 10*time.Second, 20*time.Second
		},
			"must be between 0 and shutdownGracePeriod"},
		{"both forms", func(o *Options) {
			o.ShutdownGracePeriod = time.Minute
			o.ShutdownGracePeriodByPodPriority = []ShutdownGroup{{0, 10}}
		}, "cannot be set together with shutdownGracePeriod"},
		{"runonce with apiserver", func(o *Options) { o.RunOnce, o.Kubeconfig, o.ManifestPath = true, "/k", "/m" }, "runs without an apiserver"},
		{"runonce without pods", func(o *Options) { o.RunOnce = true }, "needs static pods"},
		{"bad url", func(o *Options) { o.ManifestURL = "ftp://x/pods" }, "must be an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkValidate(t, tc.mutate, tc.want) })
	}
}

func TestParseURLHeaders(t *testing.T) {
	h := map[string][]string{}
	for _, v := range []string{"a:hello,b:again,c:world", "b:beautiful"} {
		if err := ParseURLHeaders(v, h); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{"a": {"hello"}, "b": {"again", "beautiful"}, "c": {"world"}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := ParseURLHeaders("novalue", h); err == nil {
		t.Error("a header without ':' parsed")
	}
}
