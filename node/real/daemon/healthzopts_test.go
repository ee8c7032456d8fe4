package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHealthzOptions: the healthz port defaults to the kubelet's
// 127.0.0.1:10248; the config file's healthzPort and healthzBindAddress
// set it unless the flags are given (flags win, as the kubelet's);
// healthzPort 0 turns it off; /configz reports the effective values.
func TestHealthzOptions(t *testing.T) {
	type hz struct {
		Addr        string
		Port        int32
		ConfigzAddr string
		ConfigzPort int32
	}
	tests := []struct {
		name  string
		file  string
		flags func(*Options)
		set   []string
		want  hz
	}{
		{"defaults", "", nil, nil, hz{"127.0.0.1", 10248, "127.0.0.1", 10248}},
		{"file", "healthzPort: 10348\nhealthzBindAddress: 0.0.0.0\n", nil, nil, hz{"0.0.0.0", 10348, "0.0.0.0", 10348}},
		{"file turns it off", "healthzPort: 0\n", nil, nil, hz{"127.0.0.1", 0, "127.0.0.1", 0}},
		{"flags win", "healthzPort: 10348\nhealthzBindAddress: 0.0.0.0\n",
			func(o *Options) { o.HealthzPort, o.HealthzBindAddress = 0, "::1" }, []string{"healthz-port", "healthz-bind-address"},
			hz{"::1", 0, "::1", 0}},
		{"one flag wins, the other field applies", "healthzPort: 10348\nhealthzBindAddress: 0.0.0.0\n",
			func(o *Options) { o.HealthzPort = 10448 }, []string{"healthz-port"}, hz{"0.0.0.0", 10448, "0.0.0.0", 10448}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, ignored := applyConfig(t, "/c.yaml", tc.file, tc.flags, tc.set...)
			if len(ignored) != 0 {
				t.Errorf("ignored fields: %v", ignored)
			}
			if err := o.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			kc := o.KubeletConfiguration()
			got := hz{o.HealthzBindAddress, o.HealthzPort, kc.HealthzBindAddress, *kc.HealthzPort}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("healthz options (-want +got):\n%s", diff)
			}
		})
	}
}
