package podstate

import "testing"

func TestSandboxChange(t *testing.T) {
	ready := Sandbox{ID: "new", State: SandboxReady, Attempt: 1, IP: "10.0.0.2"}
	tests := []struct {
		name        string
		sandboxes   []Sandbox
		hostNetwork bool
		want        string
	}{
		{"none", nil, false, SandboxMsgNone},
		{"ready with IP", []Sandbox{ready}, false, ""},
		{"ready on the host network", []Sandbox{{ID: "h", State: SandboxReady, HostNetwork: true}}, true, ""},
		{"two ready", []Sandbox{ready, {ID: "old", State: SandboxReady, IP: "10.0.0.1"}}, false, SandboxMsgMultipleReady},
		{"newest not ready", []Sandbox{{ID: "new", State: SandboxNotReady}, {ID: "old", State: SandboxReady}}, false, SandboxMsgNotReady},
		{"pod now on the host network", []Sandbox{ready}, true, SandboxMsgNetworkModeDiff},
		{"pod left the host network", []Sandbox{{ID: "h", State: SandboxReady, HostNetwork: true}}, false, SandboxMsgNetworkModeDiff},
		{"pod network without IP", []Sandbox{{ID: "n", State: SandboxReady}}, false, SandboxMsgNoIP},
		{"old not-ready sandboxes do not count", []Sandbox{ready, {ID: "old", State: SandboxNotReady}}, false, ""},
	}
	for _, tt := range tests {
		st := &PodStatus{Sandboxes: tt.sandboxes}
		if got := st.SandboxChange(tt.hostNetwork); got != tt.want {
			t.Errorf("%s: SandboxChange = %q, want %q", tt.name, got, tt.want)
		}
	}
	var none *PodStatus
	if got := none.SandboxChange(false); got != SandboxMsgNone {
		t.Errorf("nil status: %q", got)
	}
}
