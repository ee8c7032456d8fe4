package deps

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerEventStream is an open subscription to the runtime's container
// events.
type ContainerEventStream interface {
	// Next blocks for the next event; an error means the stream ended.
	Next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error)
}

// ContainerEvents opens container event subscriptions: the runtime's CRI
// GetContainerEvents behind a port agent code can wait on without
// channels. A subscription lives until ctx ends or the stream fails.
// Real: node/real/cri over gRPC. Simulated: fakecri's in-process events.
type ContainerEvents interface {
	Subscribe(ctx context.Context) (ContainerEventStream, error)
}

// OOMKill is one kill by the kernel's OOM killer.
type OOMKill struct {
	// Process and PID name the victim.
	Process string
	PID     int
	// VictimCgroup is the victim's memory cgroup ("/" for a process in
	// no container); Cgroup the one whose limit was hit ("/" for the
	// whole machine).
	VictimCgroup, Cgroup string
}

// OOMKills yields the kernel's OOM kills as they happen. Real:
// /dev/kmsg (node/real/machine). Simulated: scripted by the scenario.
type OOMKills interface {
	// Next blocks for the next kill, or until ctx ends.
	Next(ctx context.Context) (OOMKill, error)
}

// MemoryThresholdNotifier tells the eviction manager at once when the
// node's memory use crosses a threshold, between its periodic cycles (the
// kubelet's memcg threshold notifier). Real: a cgroup v1
// memory.usage_in_bytes eventfd on the root memory cgroup
// (node/real/memcg). Simulated: scripted by the world.
type MemoryThresholdNotifier interface {
	// SetThreshold arms the notifier for a working set (usage minus
	// inactive file pages, as memory.available counts it) above bytes.
	// Calling it again moves the threshold.
	SetThreshold(workingSetBytes uint64) error
	// Next blocks until the threshold was crossed since the last call,
	// or until ctx ends (returning ctx.Err()).
	Next(ctx context.Context) error
}

// ShutdownNotifier tells the agent that the machine is about to shut down
// and lets it hold the shutdown back while it stops the pods. Real:
// systemd-logind's PrepareForShutdown signal and a delay inhibitor lock
// over D-Bus (node/real/logind). Simulated: a node event the scenario
// sends.
type ShutdownNotifier interface {
	// Inhibit takes the delay lock that holds a shutdown back for at most
	// d; an error means graceful node shutdown cannot work here (no
	// logind, or logind allows less than d), which the caller logs.
	Inhibit(ctx context.Context, d time.Duration) error
	// Next blocks until the shutdown starts (true) or a started one is
	// cancelled (false), or until ctx ends.
	Next(ctx context.Context) (bool, error)
	// Release gives the delay lock back, letting the shutdown proceed.
	Release() error
}

// ManifestHTTP fetches static pod manifests over HTTP (--manifest-url).
// Real: net/http. Simulated: a scripted server.
type ManifestHTTP interface {
	// Get fetches url with the given request headers and returns the body
	// of a 200 answer; any other status is an error naming it.
	Get(ctx context.Context, url string, header map[string][]string) ([]byte, error)
}

// DirChanges tells the static pod file source at once when an entry of
// its manifest directory is created, written, removed or renamed, between
// its periodic scans (the kubelet's inotify watch beside its period).
// Real: fsnotify (node/real/dirwatch). Simulated: the in-memory file
// tree's change hooks (sim/harness).
type DirChanges interface {
	// Next blocks until an entry of dir changed since the previous call
	// for dir returned (since the first call: changes before it may be
	// missed), or until ctx ends (returning ctx.Err()). Another error
	// means dir cannot be watched now (it does not exist, say): the
	// caller relies on its period and tries again later.
	//
	// removed names (base names, sorted, each once) the entries of dir
	// that were removed or renamed away in that time, even those written
	// back since: a manifest deleted and written again before the caller
	// reads the directory was still deleted, as the kubelet's watch,
	// which handles every event on its own, sees it. A lost event (an
	// overflowing queue) may leave a removal out.
	Next(ctx context.Context, dir string) (removed []string, err error)
}
