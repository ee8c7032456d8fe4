package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// Every local-storage kind, over and under its limit, on the eviction
// scenario's node: the pods over a limit are evicted with the kubelet's
// message within a cycle of going over (the critical one excepted), the
// pods under keep running, an agent restart runs none of the evicted
// again, and the checker finds no violation.
func TestLocalStorageEvictions(t *testing.T) {
	h := startEviction(t, 7)
	c := NewChecker(h)
	pods := []struct {
		name string
		args [3]int // create-storage's: kind, over (odd), delay·5 s
	}{
		{"emptydir-over", [3]int{0, 1, 2}},
		{"emptydir-under", [3]int{0, 0, 0}},
		{"logs-over", [3]int{1, 1, 0}},
		{"logs-under", [3]int{1, 0, 0}},
		{"total-over", [3]int{2, 1, 1}},
		{"critical-over", [3]int{3, 1, 0}},
	}
	for _, p := range pods {
		if _, err := Create(h, storagePod(h.NodeName, p.name, p.args)); err != nil {
			t.Fatal(err)
		}
	}
	if err := RunChecked(h, c, 60*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range pods {
		pod, ok := APIPod(h, "default", p.name)
		if !ok {
			t.Fatalf("pod %s gone", p.name)
		}
		got[p.name] = string(pod.Status.Phase) + " " + pod.Status.Reason + " " + pod.Status.Message
	}
	want := map[string]string{
		"emptydir-over":  `Failed Evicted Usage of EmptyDir volume "cache" exceeds the limit "4Mi". `,
		"emptydir-under": "Running  ",
		"logs-over":      `Failed Evicted Container app exceeded its local ephemeral storage limit "16Ki". `,
		"logs-under":     "Running  ",
		"total-over":     "Failed Evicted Pod ephemeral local storage usage exceeds the total limit of containers 4Mi. ",
		"critical-over":  "Running  ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod phase, reason and message after 60 s (-want +got):\n%s", diff)
	}
	h.CrashAgent()
	if err := RunChecked(h, c, 2*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"emptydir-over", "logs-over", "total-over"} {
		if PodIs(h, "default", p, corev1.PodRunning, false) {
			t.Errorf("evicted pod %s runs again after an agent restart", p)
		}
	}
	for _, v := range c.Violations() {
		t.Errorf("violation: %+v", v)
	}
}
