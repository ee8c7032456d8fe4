package shutdown_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/shutdown"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

func pod(name string, priority int32, grace int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{Priority: &priority, TerminationGracePeriodSeconds: &grace}}
}

func TestGroupsFor(t *testing.T) {
	want := []shutdown.Group{{Priority: 0, GracePeriod: 20 * time.Second}, {Priority: podutil.SystemCriticalPriority, GracePeriod: 10 * time.Second}}
	if diff := cmp.Diff(want, shutdown.GroupsFor(30*time.Second, 10*time.Second)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tc := range [][2]time.Duration{{0, 0}, {10 * time.Second, 20 * time.Second}} {
		if got := shutdown.GroupsFor(tc[0], tc[1]); got != nil {
			t.Errorf("GroupsFor(%v, %v) = %v, want nil (off)", tc[0], tc[1], got)
		}
	}
}

// TestAssign: a pod joins the group of the highest priority at or below
// its own; below every group, the lowest.
func TestAssign(t *testing.T) {
	groups := []shutdown.Group{{Priority: 0}, {Priority: 1000}, {Priority: podutil.SystemCriticalPriority}}
	pods := []*corev1.Pod{pod("neg", -5, 30), pod("zero", 0, 30), pod("mid", 999, 30), pod("at", 1000, 30),
		pod("crit", podutil.SystemCriticalPriority, 30), pod("above", podutil.SystemCriticalPriority+1000, 30)}
	var got [][]string
	for _, g := range shutdown.Assign(groups, pods) {
		var names []string
		for _, p := range g {
			names = append(names, p.Name)
		}
		got = append(got, names)
	}
	want := [][]string{{"neg", "zero", "mid"}, {"at"}, {"crit", "above"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPodGrace(t *testing.T) {
	g := shutdown.Group{GracePeriod: 20 * time.Second}
	if got := shutdown.PodGrace(g, pod("short", 0, 5)); got != 5 {
		t.Errorf("own 5 s under a 20 s group: %d", got)
	}
	if got := shutdown.PodGrace(g, pod("long", 0, 60)); got != 20 {
		t.Errorf("own 60 s under a 20 s group: %d", got)
	}
}

// world runs a manager over scripted pods that take stopAfter to stop.
type world struct {
	k      *kernel.Kernel
	events *deps.Inbox[bool]
	log    []string
	pods   []*corev1.Pod
	stop   map[types.UID]time.Duration // how long each pod takes to stop
	done   map[types.UID]bool
	tasks  deps.Tasks
}

func (w *world) note(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("+%v ", w.k.Elapsed())+fmt.Sprintf(format, args...))
}

func (w *world) Inhibit(_ context.Context, d time.Duration) error {
	w.note("inhibit %v", d)
	return nil
}
func (w *world) Next(ctx context.Context) (bool, error) { return w.events.Get(ctx) }
func (w *world) Release() error                         { w.note("release"); return nil }
func (w *world) MayRunContainers() []*corev1.Pod        { return w.pods }
func (w *world) SyncNow()                               { w.note("node status") }
func (w *world) PodCleanedUp(uid types.UID) bool        { return w.done[uid] }

func (w *world) Kill(p *corev1.Pod, grace int64, reason, message string, cond corev1.PodCondition) {
	w.note("kill %s grace=%d %s %s/%s", p.Name, grace, reason, cond.Type, cond.Reason)
	// A slow runtime may take longer than the grace period.
	w.tasks.AfterFunc("stop "+p.Name, w.stop[p.UID], func() { w.done[p.UID] = true; w.note("stopped %s", p.Name) })
}

// TestShutdownKillsByGroup: the node status is written, the non-critical
// pods are killed with their capped grace, the critical ones once those
// stopped (or their group's time ran out), then the lock is released.
func TestShutdownKillsByGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		slow time.Duration // how long the non-critical "slow" pod takes to stop
		want []string
	}{
		{"group done early", 3 * time.Second, []string{
			"+0s inhibit 30s", "+5s node status",
			"+5s kill web grace=20 Terminated DisruptionTarget/TerminationByKubelet",
			"+5s kill slow grace=20 Terminated DisruptionTarget/TerminationByKubelet",
			"+6s stopped web", "+8s stopped slow",
			"+8s kill dns grace=10 Terminated DisruptionTarget/TerminationByKubelet",
			"+9s stopped dns", "+9s release",
		}},
		{"group out of time", time.Hour, []string{
			"+0s inhibit 30s", "+5s node status",
			"+5s kill web grace=20 Terminated DisruptionTarget/TerminationByKubelet",
			"+5s kill slow grace=20 Terminated DisruptionTarget/TerminationByKubelet",
			"+6s stopped web",
			"+25s kill dns grace=10 Terminated DisruptionTarget/TerminationByKubelet",
			"+26s stopped dns", "+26s release",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel.New(kernel.Config{Seed: 1})
			defer k.Close()
			d := k.Deps()
			w := &world{k: k, events: deps.NewInbox[bool](d.Tasks, "logind"), tasks: d.Tasks, done: map[types.UID]bool{},
				pods: []*corev1.Pod{pod("web", 0, 30), pod("dns", podutil.SystemCriticalPriority, 30), pod("slow", 10, 60)},
				stop: map[types.UID]time.Duration{"web": time.Second, "dns": time.Second, "slow": tc.slow}}
			m := shutdown.New(d.Core, shutdown.Ports{Notifier: w, Pods: w, Status: w}, shutdown.GroupsFor(30*time.Second, 10*time.Second), "n")
			ctx, cancel := k.WithCancel(context.Background())
			defer cancel()
			m.Start(ctx)
			if err := k.RunFor(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			if m.ShuttingDown() {
				t.Fatal("shutting down before any announcement")
			}
			w.events.Put(true)
			if err := k.RunFor(time.Minute); err != nil {
				t.Fatal(err)
			}
			if !m.ShuttingDown() {
				t.Error("not shutting down after the announcement")
			}
			if diff := cmp.Diff(tc.want, w.log); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShutdownCancelled: a cancellation ends the shutdown state and takes
// the lock again.
func TestShutdownCancelled(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	d := k.Deps()
	w := &world{k: k, events: deps.NewInbox[bool](d.Tasks, "logind"), tasks: d.Tasks, done: map[types.UID]bool{}}
	m := shutdown.New(d.Core, shutdown.Ports{Notifier: w, Pods: w, Status: w}, shutdown.GroupsFor(30*time.Second, 10*time.Second), "n")
	ctx, cancel := k.WithCancel(context.Background())
	defer cancel()
	m.Start(ctx)
	w.events.Put(true)
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	w.events.Put(false)
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if m.ShuttingDown() {
		t.Error("still shutting down after the cancellation")
	}
	want := []string{"+0s inhibit 30s", "+0s node status", "+0s release", "+1s node status", "+1s inhibit 30s"}
	if diff := cmp.Diff(want, w.log); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}
