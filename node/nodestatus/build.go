package nodestatus

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Pressure condition reasons and messages.
const (
	ReasonSufficientMemory   = "KubeletHasSufficientMemory"
	ReasonInsufficientMemory = "KubeletHasInsufficientMemory"
	ReasonNoDiskPressure     = "KubeletHasNoDiskPressure"
	ReasonDiskPressure       = "KubeletHasDiskPressure"
	ReasonSufficientPID      = "KubeletHasSufficientPID"
	ReasonInsufficientPID    = "KubeletHasInsufficientPID"
)

// facts is everything a node status is computed from.
type facts struct {
	now  time.Time
	info deps.MachineInfo
	// fsCapacity is the node filesystem's size; 0 when unknown.
	fsCapacity uint64
	// runtimeVersion is "<name>://<version>"; "" when unknown.
	runtimeVersion string
	ready          readiness
	memoryPressure bool
	diskPressure   bool
	pidPressure    bool
	// images, handlers and features replace the status' when not nil
	// (nil: unknown, the old value is kept).
	images   []corev1.ContainerImage
	handlers []corev1.NodeRuntimeHandler
	features *corev1.NodeFeatures
	// devCapacity and devAllocatable are the device plugins' extended
	// resources; devRemoved those removed after their plugin's grace
	// (shown at 0).
	devCapacity, devAllocatable corev1.ResourceList
	devRemoved                  []corev1.ResourceName
}

// maxNamesPerImage is how many names of one image the status lists, as
// the kubelet.
const maxNamesPerImage = 5

// nodeImages turns the runtime's images into status.images: the largest
// first (ties by ID, for a stable order), at most max of them (negative:
// all), each with its digests then its tags, at most maxNamesPerImage
// names. It never returns nil.
func nodeImages(imgs []*runtimeapi.Image, max int) []corev1.ContainerImage {
	sorted := slices.Clone(imgs)
	slices.SortStableFunc(sorted, func(a, b *runtimeapi.Image) int {
		if c := cmp.Compare(b.GetSize(), a.GetSize()); c != 0 {
			return c
		}
		return strings.Compare(a.GetId(), b.GetId())
	})
	if max >= 0 && len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make([]corev1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}

// runtimeHandlers turns the runtime's handlers into status.runtimeHandlers
// (the default handler has the empty name). It never returns nil.
func runtimeHandlers(resp *runtimeapi.StatusResponse) []corev1.NodeRuntimeHandler {
	out := make([]corev1.NodeRuntimeHandler, 0, len(resp.GetRuntimeHandlers()))
	for _, h := range resp.GetRuntimeHandlers() {
		rro, userns := h.GetFeatures().GetRecursiveReadOnlyMounts(), h.GetFeatures().GetUserNamespaces()
		out = append(out, corev1.NodeRuntimeHandler{
			Name:     h.GetName(),
			Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns},
		})
	}
	return out
}

// runtimeFeatures is status.features from the runtime's: whether it
// honours supplementalGroupsPolicy.
func runtimeFeatures(resp *runtimeapi.StatusResponse) *corev1.NodeFeatures {
	sgp := resp.GetFeatures().GetSupplementalGroupsPolicy()
	return &corev1.NodeFeatures{SupplementalGroupsPolicy: &sgp}
}

// DeclaredFeatures is node.status.declaredFeatures (KEP-5328, GA in
// v1.37): the features of the kubelet's node-declared-features registry
// (k8s.io/component-helpers/nodedeclaredfeatures) that lockstep
// implements, sorted. The apiserver refuses a pod update that needs one
// the node does not declare, and the scheduler places no pod needing one
// there. Declared: resizing a running non-sidecar init container, and
// exec/attach/port-forward WebSockets served by the agent itself (v5
// stream close and the port-forward tunnel). Not declared, so refused
// up front instead of failing on the node: resizing pod-level resources
// (Infeasible here), RestartAllContainers restart rules, resizing
// memory-backed volumes, user namespaces with the host network, DRA's.
func DeclaredFeatures() []string {
	return []string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}
}

// goArch turns a machine architecture as uname reports it into GOARCH
// form; an empty one is this binary's GOARCH.
func goArch(arch string) string {
	switch arch {
	case "":
		return runtime.GOARCH
	case "x86_64", "x86-64":
		return "amd64"
	case "aarch64", "armv8l":
		return "arm64"
	case "i386", "i486", "i586", "i686":
		return "386"
	case "armv6l", "armv7l":
		return "arm"
	}
	return arch
}

// nodeLabels are the labels a new Node gets: the extra ones, then the
// well-known ones (which win).
func nodeLabels(cfg Config, info deps.MachineInfo) map[string]string {
	l := make(map[string]string, len(cfg.Labels)+5)
	for k, v := range cfg.Labels {
		l[k] = v
	}
	arch := goArch(info.Architecture)
	l[corev1.LabelHostname] = cfg.NodeName
	l[corev1.LabelOSStable] = "linux"
	l[corev1.LabelArchStable] = arch
	l[kubeletapis.LabelOS] = "linux"
	l[kubeletapis.LabelArch] = arch
	return l
}

// Labels are the labels the node registers with under cfg (what
// admission matches a pod's node selector against before the Node is
// read from the API).
func Labels(cfg Config, info deps.MachineInfo) map[string]string { return nodeLabels(cfg, info) }

// newNode is the Node to register: labels, taints, the agent's version
// annotation and the status.
func newNode(cfg Config, f facts) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: nodeLabels(cfg, f.info)},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(cfg.Taints), Unschedulable: cfg.Unschedulable},
		Status:     buildStatus(cfg, nil, f),
	}
	unschedulable := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if cfg.Unschedulable && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return unschedulable.MatchTaint(&t) }) {
		n.Spec.Taints = append(n.Spec.Taints, unschedulable)
	}
	if cfg.AgentVersion != "" {
		n.Annotations = map[string]string{AnnotationAgentVersion: cfg.AgentVersion}
	}
	return n
}

// Capacity is the node's capacity from its machine facts: cpu and memory
// from info, pods maxPods, ephemeral-storage the node filesystem's size
// (left out when fsCapacity is 0, unknown). Each quantity has the
// kubelet's format: ephemeral-storage a decimal byte count, as cAdvisor's
// EphemeralStorageCapacityFromFsInfo writes it ("270553174016", not
// "264212084Ki").
func Capacity(info deps.MachineInfo, fsCapacity uint64, maxPods int) corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(info.CPUs), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(info.MemoryBytes), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	if fsCapacity > 0 {
		c[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fsCapacity), resource.DecimalSI)
	}
	for _, pool := range info.HugePages {
		size := resource.NewQuantity(int64(pool.PageSizeBytes), resource.BinarySI)
		c[corev1.ResourceName(corev1.ResourceHugePagesPrefix+size.String())] = *resource.NewQuantity(int64(pool.PageSizeBytes*pool.Pages), resource.BinarySI)
	}
	return c
}

// Allocatable is capacity minus reserved, never below zero: what the node
// status reports and what a resourceFieldRef to an unset limit reads.
// Memory held in huge page pools is not allocatable as memory, as
// upstream reports it.
func Allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
	a := make(corev1.ResourceList, len(capacity))
	sub := func(q, r resource.Quantity) resource.Quantity {
		q.Sub(r)
		if q.Sign() < 0 {
			return *resource.NewQuantity(0, q.Format)
		}
		return q
	}
	for name, q := range capacity {
		q = q.DeepCopy()
		if r, ok := reserved[name]; ok {
			q = sub(q, r)
		}
		a[name] = q
	}
	if mem, ok := a[corev1.ResourceMemory]; ok {
		for name, q := range capacity {
			if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				mem = sub(mem, q)
			}
		}
		a[corev1.ResourceMemory] = mem
	}
	return a
}

// ReadResources reads the machine and returns the node's capacity and
// allocatable as the node status reports them under cfg. A failed usage
// read only leaves ephemeral-storage out.
func ReadResources(ctx context.Context, m deps.Machine, cfg Config) (capacity, allocatable corev1.ResourceList, err error) {
	cfg = cfg.withDefaults()
	info, err := m.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: machine info: %w", cfg.NodeName, err)
	}
	var fs uint64
	if u, err := m.Usage(ctx); err == nil {
		fs = u.NodeFSCapacityBytes
	}
	capacity = Capacity(info, fs, cfg.MaxPods)
	return capacity, Allocatable(capacity, cfg.Reserved), nil
}

// buildStatus computes the node status from f on top of old (the status in
// the API, or nil for a new node). Fields the node owns are replaced;
// everything else (other conditions, extended resources, images…) is kept.
// Heartbeat times are f.now; a condition's transition time moves only when
// its status flips.
func buildStatus(cfg Config, old *corev1.NodeStatus, f facts) corev1.NodeStatus {
	var s corev1.NodeStatus
	if old != nil {
		s = *old.DeepCopy()
	}
	now := metav1.NewTime(f.now.Truncate(time.Second))

	c := Capacity(f.info, f.fsCapacity, cfg.MaxPods)
	if s.Capacity == nil {
		s.Capacity = corev1.ResourceList{}
	}
	if s.Allocatable == nil {
		s.Allocatable = corev1.ResourceList{}
	}
	for name, q := range c {
		s.Capacity[name] = q
	}
	for name, q := range Allocatable(c, cfg.Reserved) {
		s.Allocatable[name] = q
	}
	// A device plugin resource removed after its plugin's grace stays in
	// the status at 0, as the kubelet's MachineInfo setter keeps it: it
	// still reads as a device plugin resource, not a cluster-level one.
	for _, name := range f.devRemoved {
		s.Capacity[name] = *resource.NewQuantity(0, resource.DecimalSI)
		s.Allocatable[name] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	for name, q := range f.devCapacity {
		s.Capacity[name] = q
	}
	for name, q := range f.devAllocatable {
		s.Allocatable[name] = q
	}

	ni := &s.NodeInfo
	ni.MachineID = f.info.MachineID
	ni.SystemUUID = f.info.SystemUUID
	ni.BootID = f.info.BootID
	ni.KernelVersion = f.info.KernelVersion
	ni.OSImage = f.info.OSImage
	ni.OperatingSystem = "linux"
	ni.Architecture = goArch(f.info.Architecture)
	ni.KubeletVersion = cfg.KubeletVersion
	if f.runtimeVersion != "" {
		ni.ContainerRuntimeVersion = f.runtimeVersion
	}

	s.Addresses = nil
	if cfg.NodeIP != "" {
		s.Addresses = append(s.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: cfg.NodeIP})
	}
	if cfg.SecondaryNodeIP != "" {
		s.Addresses = append(s.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: cfg.SecondaryNodeIP})
	}
	s.Addresses = append(s.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: cfg.NodeName})
	s.DaemonEndpoints.KubeletEndpoint.Port = cfg.KubeletPort
	if f.images != nil {
		s.Images = f.images
	}
	if f.handlers != nil {
		s.RuntimeHandlers = f.handlers
	}
	if f.features != nil {
		s.Features = f.features
	}
	s.DeclaredFeatures = DeclaredFeatures()

	// The condition messages are the kubelet's words (nodestatus/setters.go):
	// users, dashboards and alerts match on them.
	for _, c := range []corev1.NodeCondition{
		pressureCondition(corev1.NodeMemoryPressure, f.memoryPressure,
			ReasonInsufficientMemory, "kubelet has insufficient memory available",
			ReasonSufficientMemory, "kubelet has sufficient memory available"),
		pressureCondition(corev1.NodeDiskPressure, f.diskPressure,
			ReasonDiskPressure, "kubelet has disk pressure",
			ReasonNoDiskPressure, "kubelet has no disk pressure"),
		pressureCondition(corev1.NodePIDPressure, f.pidPressure,
			ReasonInsufficientPID, "kubelet has insufficient PID available",
			ReasonSufficientPID, "kubelet has sufficient PID available"),
		{Type: corev1.NodeReady, Status: conditionStatus(f.ready.ready), Reason: f.ready.reason(), Message: f.ready.message},
	} {
		s.Conditions = setCondition(s.Conditions, c, now)
	}
	return s
}

func conditionStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func pressureCondition(t corev1.NodeConditionType, on bool, onReason, onMsg, offReason, offMsg string) corev1.NodeCondition {
	if on {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionTrue, Reason: onReason, Message: onMsg}
	}
	return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: offReason, Message: offMsg}
}

// setCondition puts c into conds (in place of the one of its type, else at
// the end), heartbeat now; the transition time is kept unless the status
// flipped or the condition is new.
func setCondition(conds []corev1.NodeCondition, c corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	c.LastHeartbeatTime = now
	c.LastTransitionTime = now
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status == c.Status {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
		conds[i] = c
		return conds
	}
	return append(conds, c)
}

// statusChanged reports whether b differs from a in more than the
// conditions' heartbeat times.
func statusChanged(a, b *corev1.NodeStatus) bool {
	return !equality.Semantic.DeepEqual(withoutHeartbeats(a), withoutHeartbeats(b))
}

func withoutHeartbeats(s *corev1.NodeStatus) *corev1.NodeStatus {
	s = s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return s
}

// findCondition returns the condition of type t in s, if any.
func findCondition(s *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}
