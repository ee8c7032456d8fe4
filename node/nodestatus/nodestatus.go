// Package nodestatus keeps the node's own objects in the apiserver: it
// registers the Node (labels, taints, capacity, allocatable, nodeInfo,
// addresses, images, runtime handlers) or, with NoRegister, waits for an
// administrator to create it,
// computes its status every StatusUpdateFrequency and writes it when it
// changed or every StatusReportFrequency, and keeps the node lease in
// kube-node-lease renewed. The lease has a task of its own, so neither the
// SyncLoop nor slow or failing status writes can let it expire.
//
// Where this differs from the kubelet: registration tries at once (then
// backs off 100 ms doubling to 7 s); a failed lease update is retried
// with the lease back-off (200 ms doubling to 7 s, until it succeeds)
// instead of five immediate retries; an adopted Node's labels are left as
// they are (deps.NodeAPI writes status only); allocatable is capacity
// minus Config.Reserved, without the eviction threshold.
package nodestatus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Health reports the PLEG's health; the agent provides it (wrapping
// pleg.PLEG.Healthy). A nil Health counts as always healthy.
type Health interface {
	PLEGHealthy() (bool, error)
}

// Pressure reports node resource pressure; eviction will provide it. A nil
// Pressure means no pressure.
type Pressure interface {
	NodePressure() (memory, disk, pid bool)
}

// ShutdownStatus reports whether the node is shutting down (graceful node
// shutdown); the node is NotReady meanwhile.
type ShutdownStatus interface {
	ShuttingDown() bool
}

// Default values of Config's zero fields.
const (
	DefaultMaxPods               = 110
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultLeaseDuration         = 40 * time.Second
	DefaultRuntimeUnhealthyAfter = 30 * time.Second
	DefaultMaxImages             = 50
	// DefaultKubeletVersion is the Kubernetes release whose kubelet
	// lockstep stands in for: nodeInfo.kubeletVersion, which the
	// apiserver and kubectl compare with their own for version skew.
	DefaultKubeletVersion = "v1.37.2"
)

// AnnotationAgentVersion is the Node annotation that names the agent's
// own version (nodeInfo.kubeletVersion carries the Kubernetes one).
const AnnotationAgentVersion = "lockstep.dev/version"

// LeaseNamespace is where node leases live.
const LeaseNamespace = corev1.NamespaceNodeLease

// Config says what the node is and how often its objects are refreshed.
// Zero fields take their defaults.
type Config struct {
	// NodeName names the Node and its lease (required).
	NodeName string
	// NodeIP is the node's InternalIP address; empty leaves it out.
	NodeIP string
	// SecondaryNodeIP is the node's second InternalIP address, of the
	// other family (dual-stack); empty means none.
	SecondaryNodeIP string
	// KubeletPort is the port of the agent's API, reported as
	// status.daemonEndpoints.kubeletEndpoint.Port (the apiserver dials it
	// for logs, exec and port forwarding); 0 reports none.
	KubeletPort int32
	// Labels are added to the well-known labels at registration.
	Labels map[string]string
	// Taints are the Node's taints at registration.
	Taints []corev1.Taint
	// Unschedulable registers the Node with spec.unschedulable set and the
	// node.kubernetes.io/unschedulable:NoSchedule taint
	// (--register-schedulable=false).
	Unschedulable bool
	// NoRegister: the Node is created by an administrator
	// (--register-node=false); the manager waits for it to exist, then
	// only writes its status and keeps its lease.
	NoRegister bool
	// MaxPods is the pods capacity (default 110).
	MaxPods int
	// StatusUpdateFrequency is how often the status is computed (10 s).
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often the status is written even when
	// nothing changed (5 min).
	StatusReportFrequency time.Duration
	// LeaseDuration is the lease's leaseDurationSeconds (40 s).
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often the lease is renewed (default a
	// quarter of LeaseDuration).
	LeaseRenewInterval time.Duration
	// RuntimeUnhealthyAfter: the node is NotReady once the last successful
	// runtime status check is this old (30 s).
	RuntimeUnhealthyAfter time.Duration
	// Reserved (system + kube reserved) is subtracted from capacity to
	// give allocatable; may be nil.
	Reserved corev1.ResourceList
	// KubeletVersion is nodeInfo.kubeletVersion (default
	// DefaultKubeletVersion).
	KubeletVersion string
	// AgentVersion is lockstep's own version, written at registration as
	// the AnnotationAgentVersion annotation; empty writes none.
	AgentVersion string
	// MaxImages caps status.images, the largest first
	// (nodeStatusMaxImages, default 50); negative means no cap.
	MaxImages int
	// Pressure feeds the pressure conditions; nil means none.
	Pressure Pressure
	// Shutdown makes the node NotReady while it shuts down; nil: never.
	Shutdown ShutdownStatus
	// Devices feeds the device plugins' extended resources; nil means
	// none.
	Devices Devices
}

// Devices reports the extended resources of device plugins
// (node/cm/devicemanager): capacity counts every device, allocatable the
// healthy ones; removed are resources whose plugin has been gone past its
// grace, which the status shows at capacity and allocatable 0 (reported
// on every call).
type Devices interface {
	Resources() (capacity, allocatable corev1.ResourceList, removed []corev1.ResourceName)
}

func (c Config) withDefaults() Config {
	if c.MaxPods <= 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.StatusUpdateFrequency <= 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.StatusReportFrequency <= 0 {
		c.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaseRenewInterval <= 0 {
		c.LeaseRenewInterval = c.LeaseDuration / 4
	}
	if c.RuntimeUnhealthyAfter <= 0 {
		c.RuntimeUnhealthyAfter = DefaultRuntimeUnhealthyAfter
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = DefaultKubeletVersion
	}
	if c.MaxImages == 0 {
		c.MaxImages = DefaultMaxImages
	}
	return c
}

// Retry limits and back-off curves, as the kubelet's.
const (
	// statusUpdateRetries is how many times one status sync tries to write.
	statusUpdateRetries = 5
	// registerBackoffInitial and registerBackoffMax shape the register loop.
	registerBackoffInitial = 100 * time.Millisecond
	registerBackoffMax     = 7 * time.Second
	// leaseBackoffInitial and leaseBackoffMax shape lease retries.
	leaseBackoffInitial = 200 * time.Millisecond
	leaseBackoffMax     = 7 * time.Second
)

// Runtime is what the node status manager reads of the CRI runtime: its
// status (conditions and handlers) and its version. The whole
// cri.RuntimeService is one.
type Runtime interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}

// ImageLister is what the node status manager reads of the CRI image
// service: the images, for status.images. The whole
// cri.ImageManagerService is one.
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Ports are the parts of the outside world the node status manager reads
// and writes.
type Ports struct {
	// Nodes registers the node and writes its status.
	Nodes deps.NodeAPI
	// Leases keeps the node lease.
	Leases deps.LeaseAPI
	// Events records events on the node; nil records none.
	Events deps.EventSink
	// Runtime answers the runtime's status, version and handlers.
	Runtime Runtime
	// Images lists the node's images for status.images; nil reports none.
	Images ImageLister
	// Machine reports capacity and usage.
	Machine deps.Machine
	// Metrics counts registration attempts; nil counts none.
	Metrics Observer
}

// Observer counts the manager's registration attempts:
// ObserveRegistrationAttempt is called after each (a Node created or
// adopted, or, with NoRegister, looked for), whatever its outcome.
type Observer interface {
	ObserveRegistrationAttempt()
}

// Manager registers the node and keeps its status and lease fresh.
type Manager struct {
	d      deps.Core
	ports  Ports
	cfg    Config
	health Health
	log    *slog.Logger
	// timeout bounds every apiserver and runtime call of the heartbeats:
	// min(StatusUpdateFrequency, LeaseDuration), as the kubelet's
	// heartbeat client.
	timeout time.Duration

	mu         sync.Mutex
	registered bool
	// syncing: a status sync runs; syncAgain: another was asked for
	// meanwhile (see syncSerialized).
	syncing, syncAgain bool
	// statusCtx is the status task's context, once it runs.
	statusCtx context.Context
	// regErr is why the last registration attempt failed (nil once
	// registered).
	regErr     error
	uid        types.UID
	info       *deps.MachineInfo
	runtimeVer string
	fsCapacity uint64
	rt         runtimeHealth
	// handlers and features are what the last runtime status check
	// reported (nil before one answered).
	handlers []corev1.NodeRuntimeHandler
	features *corev1.NodeFeatures
	// lastReport is when the status was last written (or created).
	lastReport time.Time
	// written is the node as last read from the API or as the last write
	// (or the registration) returned it: the base of the next status
	// patch, and what Node returns. Nil when unknown.
	written *corev1.Node

	// lease is the newest lease the lease task knows; only that task
	// touches it.
	lease *coordinationv1.Lease
}

// New returns a Manager for cfg.NodeName; health may be nil.
func New(d deps.Core, ports Ports, cfg Config, health Health) *Manager {
	cfg = cfg.withDefaults()
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		d:       d,
		ports:   ports,
		cfg:     cfg,
		health:  health,
		log:     log.With("node", cfg.NodeName),
		timeout: min(cfg.StatusUpdateFrequency, cfg.LeaseDuration),
	}
}

// BirthCry sends the node's Starting event, as the kubelet does first
// thing when it starts; the agent calls it before it starts anything else.
func (m *Manager) BirthCry() {
	m.event(corev1.EventTypeNormal, EventStarting, MessageStarting)
}

// Start spawns the "node register+status" task: register, then the
// status loop and, once the Node is known, the independent "node lease"
// task. Both end with ctx.
func (m *Manager) Start(ctx context.Context) {
	m.d.Tasks.Go("node register+status", func() { m.runStatus(ctx) })
}

// Registered reports whether the Node exists in the API (created by us or
// adopted).
func (m *Manager) Registered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered
}

// RegistrationError says why the node is not registered yet (with
// NoRegister: the Node an administrator must create does not exist), nil
// once it is, or before the first attempt.
func (m *Manager) RegistrationError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.registered {
		return nil
	}
	return m.regErr
}

// Ready computes the Ready condition now: whether the node is ready, and
// the condition's reason and message.
func (m *Manager) Ready() (bool, string, string) {
	r := m.readiness()
	return r.ready, r.reason(), r.message
}

// Node returns the Node as the manager last read or wrote it (labels,
// taints, status), nil before it first did.
func (m *Manager) Node() *corev1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		return nil
	}
	return m.written.DeepCopy()
}

// nodeUID returns the Node's UID once known.
func (m *Manager) nodeUID() types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.uid
}

// nodeRef is the object reference of the node's events (the kubelet uses
// the node name as the UID).
func (m *Manager) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: m.cfg.NodeName, UID: types.UID(m.cfg.NodeName)}
}

// event records an event about the node when an event sink is wired.
func (m *Manager) event(eventType, reason, message string) {
	if m.ports.Events != nil {
		m.ports.Events.Event(m.nodeRef(), eventType, reason, message)
	}
}
