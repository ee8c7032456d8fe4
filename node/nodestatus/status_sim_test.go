package nodestatus_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, q := range l {
		out[string(k)] = q.String()
	}
	return out
}

func TestRegistersNode(t *testing.T) {
	w := newWorld(t, nil)
	if ready, reason, msg := w.m.Ready(); ready || reason != "KubeletNotReady" || msg != "container runtime status check may not have completed yet" {
		t.Errorf("Ready() before start = %v, %q, %q", ready, reason, msg)
	}
	w.start()
	w.run(time.Second)
	if !w.m.Registered() {
		t.Fatal("not registered after 1 s")
	}
	n := w.node()
	if n == nil {
		t.Fatal("no node in the API")
	}
	wantLabels := map[string]string{
		"tier": "edge", "kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
	}
	if diff := gocmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "107374182400"}, quantities(n.Status.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff(map[string]string{"cpu": "3500m", "memory": "7Gi", "pods": "110", "ephemeral-storage": "107374182400"}, quantities(n.Status.Allocatable)); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
	wantInfo := corev1.NodeSystemInfo{
		MachineID: "mid", BootID: "bid", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS",
		ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "lockstep v0.1.0",
		OperatingSystem: "linux", Architecture: "amd64",
	}
	if diff := gocmp.Diff(wantInfo, n.Status.NodeInfo); diff != "" {
		t.Errorf("nodeInfo (-want +got):\n%s", diff)
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeHostName, Address: nodeName}}
	if diff := gocmp.Diff(wantAddrs, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	type cond struct {
		Type            corev1.NodeConditionType
		Status          corev1.ConditionStatus
		Reason, Message string
	}
	var got []cond
	for _, c := range n.Status.Conditions {
		got = append(got, cond{c.Type, c.Status, c.Reason, c.Message})
	}
	want := []cond{
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if ready, reason, msg := w.m.Ready(); !ready || reason != "KubeletReady" || msg != "kubelet is posting ready status" {
		t.Errorf("Ready() = %v, %q, %q", ready, reason, msg)
	}
	if got := w.writes(apiserver.KindNode, apiserver.VerbCreate, 0); !gocmp.Equal(secs(0), got) {
		t.Errorf("node creations at %v, want one at 0s", got)
	}
	var events []string
	for _, e := range w.srv.User().Events() {
		events = append(events, e.Object.Kind+"/"+e.Object.Name+" "+e.Type+" "+e.Reason+": "+e.Message)
	}
	// The kubelet's node events, in its order: its start, then each
	// condition as the status that registers the node sets it.
	wantEvents := []string{
		"Node/node-a Normal Starting: Starting kubelet.",
		"Node/node-a Normal NodeHasSufficientMemory: Node node-a status is now: NodeHasSufficientMemory",
		"Node/node-a Normal NodeHasNoDiskPressure: Node node-a status is now: NodeHasNoDiskPressure",
		"Node/node-a Normal NodeHasSufficientPID: Node node-a status is now: NodeHasSufficientPID",
		"Node/node-a Normal NodeReady: Node node-a status is now: NodeReady",
	}
	if diff := gocmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestAdoptsExistingNode(t *testing.T) {
	w := newWorld(t, nil)
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"kubernetes.io/hostname": nodeName, "team": "infra"}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{"example.com/gpu": resource.MustParse("2")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"}},
		},
	}
	var created *corev1.Node
	w.k.Tasks().Go("precreate", func() {
		var err error
		if created, err = w.srv.CreateNode(context.Background(), existing); err != nil {
			t.Errorf("precreate: %v", err)
		}
	})
	w.run(0)
	w.start()
	w.run(time.Second)
	if !w.m.Registered() {
		t.Fatal("existing node not adopted")
	}
	n := w.node()
	if n.UID != created.UID {
		t.Errorf("node UID %q, want the existing %q", n.UID, created.UID)
	}
	if diff := gocmp.Diff(existing.Labels, n.Labels); diff != "" {
		t.Errorf("labels of the adopted node changed (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "107374182400", "example.com/gpu": "2"}, quantities(n.Status.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	var types []corev1.NodeConditionType
	for _, c := range n.Status.Conditions {
		types = append(types, c.Type)
	}
	wantTypes := []corev1.NodeConditionType{corev1.NodeNetworkUnavailable, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}
	if diff := gocmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("condition types (-want +got):\n%s", diff)
	}
	if got := w.statusWrites(0); !gocmp.Equal(secs(0), got) {
		t.Errorf("status writes at %v, want one at once (the adopted node's report is due)", got)
	}
	// The lease learns the node's UID at its next renewal.
	w.run(10 * time.Second)
	l := w.lease()
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: created.UID}}
	if diff := gocmp.Diff(want, l.OwnerReferences); diff != "" {
		t.Errorf("lease owner references (-want +got):\n%s", diff)
	}
}

func TestRegisterRetriesWithBackoff(t *testing.T) {
	t.Run("apiserver down for 5 s", func(t *testing.T) {
		w := newWorld(t, nil)
		w.srv.Down(true)
		w.start()
		w.run(5 * time.Second)
		if w.m.Registered() || w.node() != nil {
			t.Fatal("registered while the apiserver is down")
		}
		w.srv.Down(false)
		w.run(5 * time.Second)
		// Attempts at 0, 0.1, 0.3, 0.7, 1.5, 3.1 s failed; 6.3 s is next.
		if got := w.writes(apiserver.KindNode, apiserver.VerbCreate, 0); !gocmp.Equal(secs(6.3), got) {
			t.Errorf("node created at %v, want at 6.3s", got)
		}
		if !w.m.Registered() {
			t.Error("Registered() false after the node was created")
		}
	})
	t.Run("backoff is capped at 7 s", func(t *testing.T) {
		w := newWorld(t, nil)
		w.srv.Down(true)
		w.start()
		w.run(30 * time.Second) // attempts ... 6.3, 12.7, 19.7, 26.7, 33.7
		w.srv.Down(false)
		w.run(10 * time.Second)
		if got := w.writes(apiserver.KindNode, apiserver.VerbCreate, 0); !gocmp.Equal(secs(33.7), got) {
			t.Errorf("node created at %v, want at 33.7s", got)
		}
	})
	t.Run("machine info fails twice", func(t *testing.T) {
		w := newWorld(t, nil)
		w.machine.infoFailures = 2
		w.start()
		w.run(time.Second)
		if got := w.writes(apiserver.KindNode, apiserver.VerbCreate, 0); !gocmp.Equal(secs(0.3), got) {
			t.Errorf("node created at %v, want at 0.3s", got)
		}
	})
}

func TestStatusWrittenWhenChangedOrEveryReportPeriod(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(12 * time.Minute)
	// Computed every 10 s, but nothing changed: written only when the
	// report is due.
	if diff := gocmp.Diff(secs(300, 600), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	hb := w.ready().LastHeartbeatTime.Time
	if got := w.since(hb); got != 600*time.Second {
		t.Errorf("Ready heartbeat at %v, want 10m0s (the last write)", got)
	}
	// A change is written at the next computation, and restarts the
	// report period.
	w.pleg.ok, w.pleg.err = false, errors.New("pleg: no relist has succeeded yet")
	w.run(15 * time.Second) // written at 12m10s
	w.pleg.ok, w.pleg.err = true, nil
	w.run(10 * time.Second) // written at 12m20s
	w.run(5 * time.Minute)  // due again at 17m20s
	if diff := gocmp.Diff(secs(300, 600, 730, 740, 1040), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
}

func TestRuntimeDownMakesNodeNotReady(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	w.rt.Restart(2 * time.Minute) // every call fails until 2m15s
	w.runUntil("NotReady", w.readyIs(corev1.ConditionFalse), 45*time.Second)
	// The last good check was at 10 s: it is 30 s old at 40 s.
	if got := w.elapsed(); got != 40*time.Second {
		t.Errorf("NotReady written at %v, want 40s (30 s after the last good check)", got)
	}
	c := w.ready()
	if c.Reason != "KubeletNotReady" || c.Message != "container runtime is down" || w.since(c.LastTransitionTime.Time) != 40*time.Second {
		t.Errorf("Ready condition = %+v", c)
	}
	if ready, reason, msg := w.m.Ready(); ready || reason != "KubeletNotReady" || msg != "container runtime is down" {
		t.Errorf("Ready() = %v, %q, %q", ready, reason, msg)
	}
	w.runUntil("Ready again", w.readyIs(corev1.ConditionTrue), 2*time.Minute)
	if got := w.elapsed(); got != 140*time.Second {
		t.Errorf("Ready again at %v, want 2m20s (first computation after the runtime is back)", got)
	}
	if got := w.since(w.ready().LastTransitionTime.Time); got != 140*time.Second {
		t.Errorf("Ready transition time %v, want 2m20s", got)
	}
	// Only the two flips were written; NotReady heartbeats were not.
	if diff := gocmp.Diff(secs(40, 140), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	var reasons []string
	for _, e := range w.srv.User().Events() {
		reasons = append(reasons, e.Reason)
	}
	want := []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady", "NodeNotReady"}
	if diff := gocmp.Diff(want, reasons); diff != "" {
		t.Errorf("event reasons (-want +got):\n%s", diff)
	}
}

func TestRuntimeConditions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    func(w *world)
		heal     func(w *world)
		wantAt   time.Duration
		wantMsg  string
		laterMsg string // the message once the last good check is 30 s old
		laterAt  time.Duration
	}{
		{
			name:  "runtime not ready",
			fault: func(w *world) { w.rt.SetRuntimeReady(false) },
			heal:  func(w *world) { w.rt.SetRuntimeReady(true) },
			// Not ready at the next computation (20 s); the last good
			// check (10 s) is 30 s old at 40 s: then also down.
			wantAt:   20 * time.Second,
			wantMsg:  "container runtime not ready: RuntimeReady=false reason:FakeRuntimeNotReady message:fakecri: runtime set not ready",
			laterAt:  40 * time.Second,
			laterMsg: "[container runtime is down, container runtime not ready: RuntimeReady=false reason:FakeRuntimeNotReady message:fakecri: runtime set not ready]",
		},
		{
			name:    "network not ready",
			fault:   func(w *world) { w.rt.SetNetworkReady(false) },
			heal:    func(w *world) { w.rt.SetNetworkReady(true) },
			wantAt:  20 * time.Second,
			wantMsg: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
		},
		{
			name: "PLEG unhealthy",
			fault: func(w *world) {
				w.pleg.ok, w.pleg.err = false, errors.New("pleg: last successful relist was 3m0s ago; the threshold is 3m0s")
			},
			heal:    func(w *world) { w.pleg.ok, w.pleg.err = true, nil },
			wantAt:  20 * time.Second,
			wantMsg: "PLEG is not healthy: pleg: last successful relist was 3m0s ago; the threshold is 3m0s",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.start()
			w.run(15 * time.Second)
			tc.fault(w)
			w.runUntil("NotReady", w.readyIs(corev1.ConditionFalse), time.Minute)
			if got := w.elapsed(); got != tc.wantAt {
				t.Errorf("NotReady at %v, want %v", got, tc.wantAt)
			}
			if got := w.ready().Message; got != tc.wantMsg {
				t.Errorf("Ready message:\n got %q\nwant %q", got, tc.wantMsg)
			}
			want := secs(tc.wantAt.Seconds())
			if tc.laterMsg != "" {
				w.run(tc.laterAt - w.elapsed())
				if got := w.ready().Message; got != tc.laterMsg {
					t.Errorf("Ready message at %v:\n got %q\nwant %q", w.elapsed(), got, tc.laterMsg)
				}
				want = append(want, tc.laterAt)
			}
			w.run(time.Minute)
			if diff := gocmp.Diff(want, w.statusWrites(0)); diff != "" {
				t.Errorf("status writes while NotReady (-want +got):\n%s", diff)
			}
			tc.heal(w)
			healed := w.elapsed()
			w.runUntil("Ready", w.readyIs(corev1.ConditionTrue), time.Minute)
			if got := w.elapsed() - healed; got > 10*time.Second {
				t.Errorf("Ready %v after the fault healed, want within one status period", got)
			}
			if c := w.ready(); c.Reason != nodestatus.ReasonReady || c.Message != nodestatus.MessageReady {
				t.Errorf("Ready condition = %+v", c)
			}
		})
	}
}

func TestStatusWriteRetry(t *testing.T) {
	// No lease renewals in the window: every failure hits a status write.
	w := newWorld(t, func(c *nodestatus.Config) { c.LeaseRenewInterval = time.Hour })
	w.start()
	w.run(15 * time.Second)

	w.pleg.ok, w.pleg.err = false, errors.New("pleg: stuck")
	w.srv.FailWrites(4, nil)
	w.run(10 * time.Second)
	// Four failures, the fifth attempt wins: written at 20 s.
	if diff := gocmp.Diff(secs(20), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	if c := w.ready(); c.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %s after the failures, want False", c.Status)
	}

	w.pleg.ok, w.pleg.err = true, nil
	w.srv.FailWrites(5, nil)
	w.run(10 * time.Second)
	// All five attempts at 30 s fail; the next computation writes.
	if diff := gocmp.Diff(secs(20), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes after 5 failures (-want +got):\n%s", diff)
	}
	w.run(10 * time.Second)
	if diff := gocmp.Diff(secs(20, 40), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	if c := w.ready(); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s, want True", c.Status)
	}
	// A failed patch may have applied: the next try reads the node
	// again, as the kubelet's retries do (one read per failed patch).
	if n := w.srv.Requests()[apiserver.Request{Verb: apiserver.VerbGet, Resource: "nodes"}]; n != 9 {
		t.Errorf("%d node reads, want 9 (one after each of the 9 failed patches)", n)
	}
}

func TestStatusPatchesWithoutReading(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	w.pleg.ok, w.pleg.err = false, errors.New("pleg: stuck")
	w.run(10 * time.Second)
	w.pleg.ok, w.pleg.err = true, nil
	w.run(10 * time.Minute)
	if diff := gocmp.Diff(secs(20, 30, 330), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	if c := w.ready(); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %s, want True", c.Status)
	}
	if n := w.srv.Requests()[apiserver.Request{Verb: apiserver.VerbGet, Resource: "nodes"}]; n != 0 {
		t.Errorf("%d node reads, want none: each patch is computed against the last written node", n)
	}
}

type pressure struct{ memory, disk, pid bool }

func (p *pressure) NodePressure() (bool, bool, bool) { return p.memory, p.disk, p.pid }

func TestPressureSeam(t *testing.T) {
	p := &pressure{}
	w := newWorld(t, func(c *nodestatus.Config) { c.Pressure = p })
	w.start()
	w.run(15 * time.Second)
	p.memory = true
	w.run(10 * time.Second)
	for _, c := range w.node().Status.Conditions {
		if c.Type == corev1.NodeMemoryPressure && (c.Status != corev1.ConditionTrue || c.Reason != nodestatus.ReasonInsufficientMemory) {
			t.Errorf("MemoryPressure = %+v, want True %s", c, nodestatus.ReasonInsufficientMemory)
		}
	}
	if diff := gocmp.Diff(secs(20), w.statusWrites(0)); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
}

// TestNodeObjectFields checks what a registered node tells the control
// plane about itself: taints, the agent's version, images (largest first,
// capped), runtime handlers and features from the runtime's status.
func TestNodeObjectFields(t *testing.T) {
	w := newWorld(t, func(c *nodestatus.Config) {
		c.MaxImages = 2
		c.KubeletVersion = ""
		c.AgentVersion = "lockstep v0.1.0"
		c.KubeletPort = 10250
		c.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	})
	w.start()
	w.run(time.Second)
	n := w.node()
	if n == nil {
		t.Fatal("no node in the API after 1 s")
	}
	imgs, err := w.rt.ListImages(context.Background(), nil)
	if err != nil || len(imgs) < 3 {
		t.Fatalf("fakecri images: %d %v, want at least 3 to see the cap", len(imgs), err)
	}
	slices.SortFunc(imgs, func(a, b *runtimeapi.Image) int { return cmp.Compare(b.GetSize(), a.GetSize()) })
	var wantImages []corev1.ContainerImage
	for _, img := range imgs[:2] {
		wantImages = append(wantImages, corev1.ContainerImage{Names: append(slices.Clone(img.RepoDigests), img.RepoTags...), SizeBytes: int64(img.Size)})
	}
	no := false
	type view struct {
		KubeletVersion string
		Annotations    map[string]string
		Taints         []corev1.Taint
		Port           int32
		Images         []corev1.ContainerImage
		Handlers       []corev1.NodeRuntimeHandler
		Features       *corev1.NodeFeatures
	}
	want := view{
		KubeletVersion: nodestatus.DefaultKubeletVersion,
		Annotations:    map[string]string{nodestatus.AnnotationAgentVersion: "lockstep v0.1.0"},
		Taints:         []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		Port:           10250,
		Images:         wantImages,
		Handlers: []corev1.NodeRuntimeHandler{
			{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &no}},
			{Name: "runc", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &no}},
		},
		Features: &corev1.NodeFeatures{SupplementalGroupsPolicy: &no},
	}
	got := view{n.Status.NodeInfo.KubeletVersion, n.Annotations, n.Spec.Taints, n.Status.DaemonEndpoints.KubeletEndpoint.Port,
		n.Status.Images, n.Status.RuntimeHandlers, n.Status.Features}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
}

// TestNoRegisterWaitsForTheAdministrator: with --register-node=false the
// manager never creates the Node; once an administrator does, it adopts
// it and writes its status.
func TestNoRegisterWaitsForTheAdministrator(t *testing.T) {
	w := newWorld(t, func(c *nodestatus.Config) { c.NoRegister = true })
	w.start()
	w.run(30 * time.Second)
	if w.m.Registered() || w.node() != nil {
		t.Fatalf("registered %v, node %v: want no Node created with NoRegister", w.m.Registered(), w.node())
	}
	// Looked for at 0 s, then after 0.1, 0.2, 0.4, … s, at most 7 s apart.
	if n := w.attempts.count(); n != 10 {
		t.Errorf("%d registration attempts in 30 s, want 10 (0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 13.3, 20.3, 27.3 s)", n)
	}
	wantErr := `node "` + nodeName + `" does not exist yet: with --register-node=false an administrator creates it; its status and lease are written once it does`
	if err := w.m.RegistrationError(); err == nil || err.Error() != wantErr {
		t.Errorf("RegistrationError() = %v, want %q", err, wantErr)
	}
	w.k.Tasks().Go("administrator", func() {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"made-by": "admin"}}}
		if _, err := w.srv.CreateNode(context.Background(), n); err != nil {
			t.Errorf("administrator creates the node: %v", err)
		}
	})
	w.runUntil("the node adopted and Ready", func() bool {
		n := w.node()
		if n == nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return w.m.Registered() && c.Status == corev1.ConditionTrue
			}
		}
		return false
	}, 10*time.Second)
	if err := w.m.RegistrationError(); err != nil {
		t.Errorf("RegistrationError() = %v once adopted, want nil", err)
	}
	adopted := w.attempts.count()
	w.run(30 * time.Second)
	if n := w.attempts.count(); n != adopted {
		t.Errorf("%d registration attempts after the adoption, want none", n-adopted)
	}
	if got := w.node().Labels; !gocmp.Equal(map[string]string{"made-by": "admin"}, got) {
		t.Errorf("labels %v: the administrator's node must be kept as it is", got)
	}
}
