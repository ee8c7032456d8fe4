package oomwatch

import (
	"testing"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Only kills outside every container are system OOMs, worded as the
// kubelet's event.
func TestSystemOOMMessage(t *testing.T) {
	cases := []struct {
		kill   deps.OOMKill
		system bool
		msg    string
	}{
		{deps.OOMKill{Process: "stress", PID: 4242, VictimCgroup: "/", Cgroup: "/"}, true, "System OOM encountered, victim process: stress, pid: 4242"},
		{deps.OOMKill{VictimCgroup: "/"}, true, "System OOM encountered"},
		{deps.OOMKill{Process: "sh", PID: 9, VictimCgroup: "/kubepods/pod1/abc", Cgroup: "/kubepods/pod1/abc"}, false, "System OOM encountered, victim process: sh, pid: 9"},
	}
	for _, c := range cases {
		if got := IsSystem(c.kill); got != c.system {
			t.Errorf("IsSystem(%+v) = %v, want %v", c.kill, got, c.system)
		}
		if got := Message(c.kill); got != c.msg {
			t.Errorf("Message(%+v) = %q, want %q", c.kill, got, c.msg)
		}
	}
}
