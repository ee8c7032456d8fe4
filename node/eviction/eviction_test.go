package eviction

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const mi = 1 << 20

func TestParseThresholds(t *testing.T) {
	ts, err := ParseThresholds(nil, map[string]string{"memory.available": "1Gi"}, map[string]string{"memory.available": "30s"},
		map[string]string{"nodefs.available": "1Gi"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range ts {
		s := string(th.Signal) + "<" + th.Value.String() + " grace=" + th.GracePeriod.String()
		if th.MinReclaim != nil {
			s += " min=" + th.MinReclaim.String()
		}
		got = append(got, s)
	}
	want := []string{
		"imagefs.available<15% grace=0s",
		"memory.available<100Mi grace=0s",
		"allocatableMemory.available<100Mi grace=0s",
		"nodefs.available<10% grace=0s min=1Gi",
		"nodefs.inodesFree<5% grace=0s",
		"memory.available<1Gi grace=30s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thresholds (-want +got):\n%s", diff)
	}
	// A given evictionHard replaces the defaults; "0" turns one off.
	ts, err = ParseThresholds(map[string]string{"memory.available": "200Mi", "nodefs.available": "0%"}, nil, nil, nil, false)
	if err != nil || len(ts) != 1 || ts[0].Value.String() != "200Mi" {
		t.Errorf("explicit evictionHard: %v, %v", ts, err)
	}
	for _, bad := range []struct{ hard, soft, grace map[string]string }{
		{hard: map[string]string{"memory.free": "1Gi"}},
		{hard: map[string]string{"memory.available": "120%"}},
		{soft: map[string]string{"memory.available": "1Gi"}},
		{grace: map[string]string{"memory.available": "1m"}},
	} {
		if _, err := ParseThresholds(bad.hard, bad.soft, bad.grace, nil, false); err == nil {
			t.Errorf("ParseThresholds(%v, %v, %v) accepted", bad.hard, bad.soft, bad.grace)
		}
	}
}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// The cycle's decisions as upstream's: a soft threshold sets the condition
// at once but is acted upon after its grace period; a met threshold stays
// met until its minimum reclaim; a condition stays for the transition
// period after the signal cleared.
func TestEvaluate(t *testing.T) {
	hard := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("100Mi")}, MinReclaim: &Value{Quantity: q("50Mi")}}
	soft := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("500Mi")}, GracePeriod: 30 * time.Second}
	pid := Threshold{Signal: SignalPIDAvailable, Value: Value{Percentage: 0.1}}
	cfg := Config{Thresholds: []Threshold{hard, soft, pid}, PressureTransitionPeriod: time.Minute}
	t0 := time.Unix(1000, 0)
	mem := func(avail int64) Observations {
		return Observations{SignalMemoryAvailable: {Available: avail, Capacity: 8 << 30}, SignalPIDAvailable: {Available: 1000, Capacity: 1000}}
	}
	type step struct {
		at    time.Duration
		obs   Observations
		conds []corev1.NodeConditionType
		act   []Signal
	}
	memP := []corev1.NodeConditionType{corev1.NodeMemoryPressure}
	steps := []step{
		{at: 0, obs: mem(1 << 30)},
		{at: 10 * time.Second, obs: mem(400 * mi), conds: memP},                                                              // soft met, grace running
		{at: 30 * time.Second, obs: mem(400 * mi), conds: memP},                                                              // 20 s in
		{at: 40 * time.Second, obs: mem(400 * mi), conds: memP, act: []Signal{SignalMemoryAvailable}},                        // grace met
		{at: 50 * time.Second, obs: mem(90 * mi), conds: memP, act: []Signal{SignalMemoryAvailable, SignalMemoryAvailable}},  // hard too
		{at: 60 * time.Second, obs: mem(120 * mi), conds: memP, act: []Signal{SignalMemoryAvailable, SignalMemoryAvailable}}, // hard until 150Mi
		{at: 70 * time.Second, obs: mem(600 * mi), conds: memP},                                                              // clear, condition stays
		{at: 110 * time.Second, obs: mem(600 * mi), conds: memP},                                                             // 50 s after it was last seen (+60 s)
		{at: 120 * time.Second, obs: mem(600 * mi)},                                                                          // 60 s after: off
		{at: 140 * time.Second, obs: Observations{SignalPIDAvailable: {Available: 50, Capacity: 1000}},
			conds: []corev1.NodeConditionType{corev1.NodePIDPressure}, act: []Signal{SignalPIDAvailable}},
	}
	var s State
	for _, st := range steps {
		d := s.Evaluate(cfg, st.obs, t0.Add(st.at))
		var act []Signal
		for _, th := range d.Act {
			act = append(act, th.Signal)
		}
		if diff := cmp.Diff(st.conds, d.Conditions); diff != "" {
			t.Errorf("+%v conditions (-want +got):\n%s", st.at, diff)
		}
		if diff := cmp.Diff(st.act, act); diff != "" {
			t.Errorf("+%v acted upon (-want +got):\n%s", st.at, diff)
		}
	}
}

func pod(name string, prio int32, memReq string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{Priority: &prio, Containers: []corev1.Container{{Name: "app"}}}}
	if memReq != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memReq)}
	}
	return p
}

func names(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod.Name)
	}
	return out
}

// Memory ranking: no stats first, then usage over requests, then lower
// priority, then the most above requests.
func TestRankMemory(t *testing.T) {
	pods := []*corev1.Pod{
		pod("guaranteed-under", 0, "1Gi"),      // uses 500Mi
		pod("best-effort-small", 0, ""),        // uses 100Mi
		pod("burstable-over-hi", 100, "100Mi"), // uses 900Mi
		pod("best-effort-big", 0, ""),          // uses 700Mi
		pod("no-stats", 1000, ""),
		pod("burstable-under-lo", -5, "1Gi"), // uses 10Mi
	}
	usages := Usages{
		"guaranteed-under": {Memory: 500 * mi}, "best-effort-small": {Memory: 100 * mi}, "burstable-over-hi": {Memory: 900 * mi},
		"best-effort-big": {Memory: 700 * mi}, "burstable-under-lo": {Memory: 10 * mi},
	}
	cs := Candidates(pods, usages)
	Rank(SignalMemoryAvailable, cs)
	want := []string{"no-stats", "best-effort-big", "best-effort-small", "burstable-over-hi", "burstable-under-lo", "guaranteed-under"}
	if diff := cmp.Diff(want, names(cs)); diff != "" {
		t.Errorf("memory ranking (-want +got):\n%s", diff)
	}
}

// PID ranking: priority first, then the most processes; disk ranking by
// the writable layers above the ephemeral-storage request.
func TestRankPIDAndDisk(t *testing.T) {
	pods := []*corev1.Pod{pod("a", 10, ""), pod("b", 0, ""), pod("c", 0, ""), pod("d", 0, "")}
	pods[3].Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
	usages := Usages{"a": {Processes: 900, Disk: 9 << 30}, "b": {Processes: 5, Disk: 1 << 30}, "c": {Processes: 50, Disk: 2 << 30}, "d": {Processes: 1, Disk: 5 << 30}}
	cs := Candidates(pods, usages)
	Rank(SignalPIDAvailable, cs)
	if diff := cmp.Diff([]string{"c", "b", "d", "a"}, names(cs)); diff != "" {
		t.Errorf("pid ranking (-want +got):\n%s", diff)
	}
	cs = Candidates(pods, usages)
	Rank(SignalNodeFsAvailable, cs)
	if diff := cmp.Diff([]string{"c", "b", "a", "d"}, names(cs)); diff != "" {
		t.Errorf("disk ranking (-want +got):\n%s", diff)
	}
}

// Inode ranking: any inode exceeds the (absent) request of inodes, as
// upstream's exceedDiskRequests measures inodes against it; then priority;
// then inodes above the ephemeral-storage request. A pod that requests
// storage is not spared the first rank for it.
func TestRankInodes(t *testing.T) {
	pods := []*corev1.Pod{pod("none", 0, ""), pod("hi", 10, ""), pod("lo-requests", 0, "")}
	pods[2].Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1k")}
	usages := Usages{"none": {Inodes: 0}, "hi": {Inodes: 900}, "lo-requests": {Inodes: 5}}
	cs := Candidates(pods, usages)
	Rank(SignalNodeFsInodesFree, cs)
	if diff := cmp.Diff([]string{"lo-requests", "hi", "none"}, names(cs)); diff != "" {
		t.Errorf("inode ranking (-want +got):\n%s", diff)
	}
}

func TestMessage(t *testing.T) {
	p := pod("web", 0, "100Mi")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side"})
	c := Candidate{Pod: p, HasStats: true, Usage: PodUsage{Memory: 300 * mi, Containers: []ContainerUsage{{Name: "app", Memory: 50 * mi}, {Name: "side", Memory: 250 * mi}}}}
	th := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("100Mi")}}
	got := Message(th, Observations{SignalMemoryAvailable: {Available: 90 * mi, Capacity: 8 << 30}}, c)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. " +
		"Container side was using 250Mi, request is 0, has larger consumption of memory. "
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
}
