package machine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func TestOOMParser(t *testing.T) {
	lines := []string{
		"6,1234,5678,-;stress invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
		"6,1235,5679,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=stress,pid=4242,uid=0",
		"3,1236,5680,-;Out of memory: Killed process 4242 (stress) total-vm:1052016kB, anon-rss:1047560kB, file-rss:4kB",
		"6,1240,5690,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/pod1/abc,task_memcg=/kubepods/pod1/abc,task=sh,pid=99,uid=0",
		"3,1241,5691,-;Memory cgroup out of memory: Killed process 99 (sh) total-vm:3000kB",
		"Out of memory: Kill process 7 (java) score 900 or sacrifice child",
	}
	var p OOMParser
	var got []deps.OOMKill
	for _, l := range lines {
		if k, ok := p.Line(l); ok {
			got = append(got, k)
		}
	}
	want := []deps.OOMKill{
		{Process: "stress", PID: 4242, VictimCgroup: "/", Cgroup: "/"},
		{Process: "sh", PID: 99, VictimCgroup: "/kubepods/pod1/abc", Cgroup: "/kubepods/pod1/abc"},
		{Process: "java", PID: 7, VictimCgroup: "/", Cgroup: "/"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kills (-want +got):\n%s", diff)
	}
}
