package deps

import (
	"context"
	"io/fs"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/types"
)

// API is the set of narrow apiserver ports the agent uses. Real: client-go
// (node/real/kube). Simulated: sim's apiserver.
type API struct {
	Pods   PodAPI
	Nodes  NodeAPI
	Leases LeaseAPI
	Events EventSink
	// ConfigMaps, Secrets and Services feed containers' environments; nil
	// (standalone) means none can be read.
	ConfigMaps ConfigMapAPI
	Secrets    SecretAPI
	Services   ServiceAPI
	// RuntimeClasses resolves runtimeClassName; nil (standalone) fails
	// every pod that names one.
	RuntimeClasses RuntimeClassAPI
	// ObjectWatches keeps the configMaps and secrets of volumes fresh;
	// nil: they are read again at each resync.
	ObjectWatches ObjectWatchAPI
	// NodeWatch keeps admission's view of the Node (labels, taints)
	// fresh; nil: the Node is read again when admission's copy is old.
	NodeWatch NodeWatchAPI
	// Tokens issues service account tokens for projected volumes; nil
	// (standalone): a pod whose volume needs one cannot start.
	Tokens TokenAPI
	// Claims reads the PersistentVolumeClaims of persistentVolumeClaim
	// volumes and the PersistentVolumes bound to them; nil (standalone):
	// a pod with such a volume cannot start.
	Claims ClaimAPI
	// TrustBundles reads the ClusterTrustBundles of projected
	// clusterTrustBundle sources; nil (standalone): such a volume cannot
	// be set up.
	TrustBundles TrustBundleAPI
}

// TrustBundleAPI reads ClusterTrustBundles (certificates.k8s.io/v1,
// cluster-scoped; every node may read them all).
type TrustBundleAPI interface {
	// GetClusterTrustBundle reads one bundle; a missing one is a NotFound
	// error.
	GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error)
	// ListClusterTrustBundles lists the bundles of one signer (field
	// selector spec.signerName).
	ListClusterTrustBundles(ctx context.Context, signerName string) ([]*certificatesv1.ClusterTrustBundle, error)
}

// ClaimAPI reads PersistentVolumeClaims and PersistentVolumes. Under Node
// authorization a node may read only the claims its pods use and the
// volumes bound to them.
type ClaimAPI interface {
	// GetPersistentVolumeClaim reads one claim; a missing one is a
	// NotFound error.
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	// GetPersistentVolume reads one (cluster-scoped) volume; a missing
	// one is a NotFound error.
	GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// TokenAPI requests service account tokens (the serviceaccounts/token
// subresource, TokenRequest API). Under Node authorization a node may
// request only tokens bound to a pod bound to it, for that pod's service
// account.
type TokenAPI interface {
	// CreateToken requests a token for the service account
	// namespace/serviceAccount as tr.Spec describes it (audiences,
	// expirationSeconds, the bound object); the answer's Status holds the
	// token and its expiration.
	CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// RuntimeClassAPI reads RuntimeClasses (node.k8s.io/v1).
type RuntimeClassAPI interface {
	// GetRuntimeClass reads one RuntimeClass; a missing one is a NotFound
	// error.
	GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
}

// ConfigMapAPI reads the configMaps a pod bound to this node refers to
// (Node authorization allows no others).
type ConfigMapAPI interface {
	// GetConfigMap reads one configMap; a missing one is a NotFound error
	// (k8s.io/apimachinery/pkg/api/errors).
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// SecretAPI reads the secrets a pod bound to this node refers to (Node
// authorization allows no others).
type SecretAPI interface {
	// GetSecret reads one secret; a missing one is a NotFound error.
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// ServiceAPI lists and watches the services of every namespace (a node
// may read them all), for the service environment variables: one list,
// then one watch for the node's lifetime, as upstream's service informer.
type ServiceAPI interface {
	// ListServices lists the services of every namespace and returns the
	// list's resource version.
	ListServices(ctx context.Context) ([]*corev1.Service, string, error)
	// WatchServices watches the services of every namespace after
	// resourceVersion.
	WatchServices(ctx context.Context, resourceVersion string) (ServiceWatch, error)
}

// ServiceEvent is one change to a service, or a bookmark (Service nil):
// either way ResourceVersion is where a new watch resumes.
type ServiceEvent struct {
	// Deleted says the service is gone; otherwise it was added or
	// modified.
	Deleted bool
	Service *corev1.Service
	// ResourceVersion is the resource version the event brings the
	// watcher to.
	ResourceVersion string
}

// ServiceWatch is an open watch on the services of every namespace.
type ServiceWatch interface {
	// Next blocks for the next event. An error means the watch ended: one
	// wrapping io.EOF means the apiserver closed it normally (its watch
	// timeout) and a new watch may resume from the last resource version;
	// any other (ResourceExpired included) means the caller lists again.
	Next(ctx context.Context) (ServiceEvent, error)
	// Stop releases the watch.
	Stop()
}

// PodEventType says what happened to a watched pod.
type PodEventType string

// The pod watch event types.
const (
	PodAdded    PodEventType = "ADDED"
	PodModified PodEventType = "MODIFIED"
	PodDeleted  PodEventType = "DELETED"
)

// PodEvent is one change to a pod bound to this node.
type PodEvent struct {
	Type PodEventType
	Pod  *corev1.Pod
}

// PodWatch is an open watch on the pods bound to this node.
type PodWatch interface {
	// Next blocks for the next event; an error means the watch broke and
	// the caller must list again.
	Next(ctx context.Context) (PodEvent, error)
	// Stop releases the watch.
	Stop()
}

// PodAPI reads the pods bound to this node and writes what the node owns
// of them.
type PodAPI interface {
	// ListPods returns the pods bound to nodeName and the list's resource
	// version. The list is no older than resource version notOlderThan
	// ("": any): a relist never goes back behind what the agent has seen.
	ListPods(ctx context.Context, nodeName, notOlderThan string) ([]*corev1.Pod, string, error)
	// WatchPods watches pods bound to nodeName after resourceVersion.
	WatchPods(ctx context.Context, nodeName, resourceVersion string) (PodWatch, error)
	// GetPod reads a pod as the apiserver holds it now (a consistent
	// read, not a cache's): the status manager's base after a write
	// whose outcome it does not know.
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// PatchPodStatus applies patch, a strategic-merge patch of the pod's
	// status subresource that carries metadata.uid as a precondition: a
	// pod of that name with another UID fails with a conflict, a missing
	// one with NotFound. It returns the pod as written.
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// DeletePod deletes a pod with grace period 0 and a UID precondition.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	// CreatePod creates a pod (mirror pods of static pods).
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
}

// NodeAPI registers the node and writes its status.
type NodeAPI interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	CreateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error)
	// PatchNodeStatus applies patch, a strategic-merge patch of the
	// node's status subresource, and returns the node as written.
	PatchNodeStatus(ctx context.Context, name string, patch []byte) (*corev1.Node, error)
}

// LeaseAPI keeps the node's lease in kube-node-lease.
type LeaseAPI interface {
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// EventSink records Kubernetes events about objects (pods, the node).
type EventSink interface {
	// Event records an event of eventType (Normal or Warning) on obj.
	Event(obj *corev1.ObjectReference, eventType, reason, message string)
}

// MachineInfo is the node's fixed capacity.
type MachineInfo struct {
	MachineID string
	// SystemUUID is the firmware's system UUID (SMBIOS product_uuid);
	// empty when it cannot be read.
	SystemUUID    string
	BootID        string
	KernelVersion string
	OSImage       string
	Architecture  string
	CPUs          int
	MemoryBytes   uint64
	MaxPIDs       uint64
	// HugePages are the host's huge page pools, smallest page first: the
	// page sizes a container's cgroup limits (every size, 0 when the pod
	// asks for none) and the node's hugepages-<size> capacity.
	HugePages []HugePagePool
	// CgroupV2 says the host runs the unified cgroup v2 hierarchy.
	CgroupV2 bool
	// AppArmor says the host's kernel has AppArmor enabled (a pod that
	// asks for an AppArmor profile is refused on a host without it).
	AppArmor bool
	// Topology places every online logical CPU, by ascending ID; empty
	// when it cannot be read (the CPU manager's static policy needs it).
	Topology []CPUInfo
	// NUMANodes are the memory nodes and their memory, by ascending ID;
	// empty when they cannot be read (the memory manager's static policy
	// needs them).
	NUMANodes []NUMANode
}

// NUMANode is one NUMA node's memory.
type NUMANode struct {
	ID          int
	MemoryBytes uint64
}

// CPUInfo is one logical CPU (a hardware thread) and where it sits.
type CPUInfo struct {
	// ID is the kernel's CPU number (cpuset.cpus names it).
	ID int
	// CoreID identifies its physical core uniquely on the node (the
	// lowest CPU ID among the core's threads), SocketID its package and
	// NUMANodeID its memory node.
	CoreID, SocketID, NUMANodeID int
}

// HugePagePool is one huge page size the kernel offers and how many pages
// of it are reserved.
type HugePagePool struct {
	PageSizeBytes uint64
	Pages         uint64
}

// MachineUsage is a snapshot of node-level resource usage for eviction.
type MachineUsage struct {
	MemoryAvailableBytes uint64
	NodeFSAvailableBytes uint64
	NodeFSCapacityBytes  uint64
	NodeFSInodesFree     uint64
	NodeFSInodes         uint64
	// ImageFS* describe the runtime's image filesystem when it is a
	// filesystem of its own; zero when it shares the node filesystem.
	ImageFSAvailableBytes uint64
	ImageFSCapacityBytes  uint64
	ImageFSInodesFree     uint64
	ImageFSInodes         uint64
	PIDsAvailable         uint64
	// CPUUsageCoreNanoSeconds is the node's cumulative CPU time, all
	// cores, idle and I/O wait excluded; 0 when unknown (the stats then
	// sum the pods').
	CPUUsageCoreNanoSeconds uint64
}

// Machine reports the node's capacity and usage. Real: /proc, statfs and
// cgroups. Simulated: a model.
type Machine interface {
	Info(ctx context.Context) (MachineInfo, error)
	Usage(ctx context.Context) (MachineUsage, error)
}

// HTTPRequest is one probe GET: no redirect is followed (the prober
// decides which to follow).
type HTTPRequest struct {
	// URL is absolute: scheme, host:port, path and query.
	URL string
	// Host, when set, is the Host header.
	Host string
	// Header holds the other request headers.
	Header map[string][]string
	// Timeout, when set, bounds the whole request as http.Client.Timeout
	// does (a probe's timeoutSeconds): a request that runs out of it
	// fails with the client's timeout error, as the kubelet's probes do.
	// The simulated network leaves it to ctx.
	Timeout time.Duration
}

// HTTPResponse is what a probe GET got back.
type HTTPResponse struct {
	StatusCode int
	// Location is the Location header of a redirect ("" otherwise).
	Location string
	// Body is the start of the body (at most the prober's output limit).
	Body []byte
}

// ProbeNetwork dials probe targets from the agent's network namespace.
// Every call ends when ctx does (the probe's timeout); a target that does
// not answer is an error. Real: net/http, net.Dial and the gRPC health
// client (node/real/probenet). Simulated: answered from the fake
// containers' scripted endpoints.
type ProbeNetwork interface {
	// HTTPGet sends one GET and returns the response, following no
	// redirect.
	HTTPGet(ctx context.Context, req HTTPRequest) (HTTPResponse, error)
	// DialTCP opens (and closes) a TCP connection to host:port.
	DialTCP(ctx context.Context, host string, port int) error
	// GRPCHealth calls grpc.health.v1.Health/Check for service on
	// host:port and returns the serving status's name ("SERVING", …).
	GRPCHealth(ctx context.Context, host string, port int, service string) (string, error)
}

// Files is the agent's file system: it reads the static pod manifest
// directory and containers' termination messages, creates pod log
// directories and the container log symlinks,
// removes the logs of removed containers and pods, and keeps the pods'
// volume directories (node/volume).
type Files interface {
	ReadDir(dir string) ([]fs.DirEntry, error)
	ReadFile(path string) ([]byte, error)
	// ReadFileTail returns the last max bytes of a file (all of a smaller
	// one) without reading the rest: termination messages and the log
	// tails that stand in for them, whatever a container wrote.
	ReadFileTail(path string, max int64) ([]byte, error)
	// MkdirAll creates a directory and its parents (mode 0755).
	MkdirAll(dir string) error
	// Remove removes a file or symbolic link (not what it points to); a
	// path that does not exist is not an error.
	Remove(path string) error
	// RemoveAll removes a path and everything under it; a path that does
	// not exist is not an error.
	RemoveAll(path string) error
	// Symlink creates link pointing to target; an existing link is an
	// error.
	Symlink(target, link string) error
	// CreateFile creates or truncates a file with mode perm and writes
	// data to it; its directory must exist.
	CreateFile(path string, data []byte, perm fs.FileMode) error
	// Rename moves from to to, replacing a file or symbolic link at to
	// atomically (the volume writer swaps its ..data link this way).
	Rename(from, to string) error
	// Readlink returns the target of a symbolic link.
	Readlink(path string) (string, error)
	// Stat describes path, following symbolic links; a missing path is an
	// error satisfying errors.Is(err, fs.ErrNotExist). Its mode carries
	// fs.ModeSetgid when the setgid bit is set.
	Stat(path string) (fs.FileInfo, error)
	// Lchown sets the user and group owning path, not following a final
	// symbolic link; -1 leaves an id as it is (volume ownership for a
	// pod's fsGroup).
	Lchown(path string, uid, gid int) error
	// Chmod sets the permission bits of path, and its setgid and sticky
	// bits when mode carries fs.ModeSetgid or fs.ModeSticky; other mode
	// bits are ignored.
	Chmod(path string, mode fs.FileMode) error
}

// DirUsage is what a directory tree uses on its filesystem.
type DirUsage struct {
	// Bytes are the blocks its files, directories and links occupy (as
	// du counts them); Inodes how many of them there are.
	Bytes, Inodes uint64
}

// DiskUsage measures directory trees on the node's disks (du): the pods'
// emptyDir, configMap and secret volumes and container log directories,
// whose usage the eviction manager holds against their limits and the
// stats Summary reports. Real: a walk of the tree
// (node/real/du). Simulated: the sizes of the in-memory files plus what
// the fake runtime's containers are scripted to have written.
type DiskUsage interface {
	// DirUsage measures the tree under path; a path that does not exist
	// is an error satisfying errors.Is(err, fs.ErrNotExist).
	DirUsage(ctx context.Context, path string) (DirUsage, error)
}

// CSRAPI requests certificates (certificates.k8s.io/v1
// CertificateSigningRequests): the node's client certificate, with the
// bootstrap credentials or its own, and its serving certificate.
type CSRAPI interface {
	// CreateCSR creates a CertificateSigningRequest; an existing one of
	// the same name is an AlreadyExists error.
	CreateCSR(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error)
	// GetCSR reads one CertificateSigningRequest; a missing one is a
	// NotFound error.
	GetCSR(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error)
	// WaitCSR blocks until the named request (of that UID) has a
	// certificate or a Denied or Failed condition, and returns it as last
	// seen. It returns an error when ctx ends, when the request is gone
	// (NotFound) or when the watch breaks (the caller retries).
	WaitCSR(ctx context.Context, name string, uid types.UID) (*certificatesv1.CertificateSigningRequest, error)
}
