package fakecri

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/benbjohnson/clock"
)

// Config configures a Runtime. The zero value is usable: New fills every
// unset field with a default suited to the real clock.
type Config struct {
	// Clock is the time source (default: the real clock, clock.New()).
	Clock Clock
	// Rand is the randomness source (default: a PCG seeded with 1, 2).
	Rand Rand
	// NewSignal makes the signals the runtime blocks on (default:
	// NewChanSignal). The name says what the signal is for.
	NewSignal func(name string) Signal
	// Files receives container logs (default: OSFiles).
	Files Files

	// Node is the node's capacity and the usage of everything that is not
	// a container or an image (default: DefaultNodeModel()).
	Node *NodeModel
	// Images are present at start. Nil means DefaultImages(); an empty,
	// non-nil slice means none.
	Images []Image
	// Registry gives the size of images that PullImage fetches; images not
	// listed get DefaultPullSize bytes and DefaultPullInodes inodes.
	Registry []Image
	// PullLatency is how long PullImage takes (through Clock.Sleep).
	PullLatency time.Duration

	// NoEvents makes GetContainerEvents answer Unimplemented, like
	// containerd 1.6.
	NoEvents bool
	// NoSandboxStats makes PodSandboxStats and ListPodSandboxStats answer
	// Unimplemented, like containerd 1.6 on some hosts (pod usage then
	// comes from the containers'); NoNanoCores leaves usage_nano_cores out
	// of CPU stats (the caller computes the rate from two samples).
	NoSandboxStats bool
	NoNanoCores    bool
	// EventBuffer is how many undelivered events a subscription keeps
	// before it drops new ones, like containerd's 1000-event channel
	// (default 1000).
	EventBuffer int
	// StaleRetention is how long removed objects are remembered so that
	// stale lists are exact (default 5 minutes; raised to the largest
	// staleness set with SetListStaleness).
	StaleRetention time.Duration

	// PodCIDR is where sandbox IPs come from (default 10.88.0.0/16,
	// containerd's default bridge network), in order, wrapping around.
	PodCIDR netip.Prefix
	// LoopbackCIDR, when valid (an IPv4 prefix inside 127.0.0.0/8, e.g.
	// DefaultLoopbackCIDR), replaces PodCIDR with addresses a process can
	// serve (fakecri/podnet): each sandbox not on the host network gets
	// the lowest free address of the prefix, never its first two or last
	// address nor 127.0.0.1, given back when the sandbox is removed; when
	// none is free RunPodSandbox fails, as a CNI's IPAM does. New panics
	// on a prefix ParsePodNetwork would refuse.
	LoopbackCIDR netip.Prefix
	// NodeAddress, when valid, is where the endpoints of host-network
	// sandboxes answer (AnswerHTTP and the others, ListeningAt); their
	// PodSandboxStatus still has no IP, as containerd's. Unset, they
	// answer nowhere.
	NodeAddress netip.Addr
	// RuntimeHandlers are the accepted RunPodSandbox runtime handlers in
	// addition to "" (default: "runc").
	RuntimeHandlers []string
	// UserNamespaces makes every handler report the user_namespaces
	// feature (as containerd 2 with a recent runc does) and accept
	// sandboxes in a user namespace of their own; without it the runtime
	// reports the feature off for every handler and refuses them (as
	// containerd 1.6 would run them in the node's: the agent checks first).
	UserNamespaces bool
	// RecursiveReadOnlyMounts makes every handler report the
	// recursive_read_only_mounts feature (as containerd 2 on a kernel
	// with mount_setattr does); without it the runtime reports it off, as
	// containerd 1.6 does.
	RecursiveReadOnlyMounts bool
	// ImagefsMountpoint is the imagefs mountpoint ImageFsInfo and
	// container stats name (default containerd's snapshotter directory). A
	// real kubelet asks cAdvisor about that directory, so beside one it
	// must exist on the host.
	ImagefsMountpoint string
	// RuntimeName and RuntimeVersion are what Version answers (default
	// "fakecri" and "0.1.0").
	RuntimeName, RuntimeVersion string
	// IDSeed is mixed into every generated ID, so that several runtimes in
	// one simulation make different IDs.
	IDSeed uint64
}

// Image describes an image, preloaded or in the registry.
type Image struct {
	// Ref is the image reference, e.g. "busybox:latest"; it is normalized
	// like containerd does ("docker.io/library/busybox:latest").
	Ref string
	// Size is the image's size in bytes, counted in imagefs.
	Size uint64
	// Inodes is the number of inodes its layers use in imagefs.
	Inodes uint64
	// Pinned images are reported as pinned (kubelet's image GC skips them).
	Pinned bool
	// User is the image config's user: a UID or a user name, optionally
	// followed by ":group". ImageStatus reports a numeric user as Uid and
	// a name as Username, as containerd does; empty reports neither (the
	// image runs as root).
	User string
	// Username and Password, on an image of Config.Registry, make the
	// registry require them: a pull without an AuthConfig carrying both
	// fails with 401 Unauthorized, like a registry with basic auth.
	Username, Password string
	// PullLatency, on an image of Config.Registry, is how long pulling it
	// takes (through Clock.Sleep) instead of Config.PullLatency.
	PullLatency time.Duration
}

// Default sizes of a pulled image that Config.Registry does not describe.
const (
	DefaultPullSize   = 20 << 20
	DefaultPullInodes = 1000
)

// DefaultImages is the preloaded image set.
func DefaultImages() []Image {
	return []Image{
		{Ref: "registry.k8s.io/pause:3.10", Size: 320_368, Inodes: 12, Pinned: true},
		{Ref: "busybox:latest", Size: 2_166_802, Inodes: 410},
		{Ref: "nginx:latest", Size: 72_099_501, Inodes: 3_400},
	}
}

// withDefaults returns cfg with every unset field filled.
func (cfg Config) withDefaults() Config {
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if cfg.NewSignal == nil {
		cfg.NewSignal = NewChanSignal
	}
	if cfg.Files == nil {
		cfg.Files = OSFiles{}
	}
	if cfg.Node == nil {
		m := DefaultNodeModel()
		cfg.Node = &m
	}
	if cfg.Images == nil {
		cfg.Images = DefaultImages()
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = 1000
	}
	if cfg.StaleRetention <= 0 {
		cfg.StaleRetention = 5 * time.Minute
	}
	if !cfg.PodCIDR.IsValid() {
		cfg.PodCIDR = netip.MustParsePrefix("10.88.0.0/16")
	}
	if cfg.RuntimeHandlers == nil {
		cfg.RuntimeHandlers = []string{"runc"}
	}
	if cfg.RuntimeName == "" {
		cfg.RuntimeName = "fakecri"
	}
	if cfg.ImagefsMountpoint == "" {
		cfg.ImagefsMountpoint = snapshotterMount
	}
	if cfg.RuntimeVersion == "" {
		cfg.RuntimeVersion = "0.1.0"
	}
	return cfg
}
