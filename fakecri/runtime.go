package fakecri

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/netip"
	"sync"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the fake CRI runtime. All its methods are safe for concurrent
// use; state is guarded by one mutex that is never held across a Sleep or a
// Wait.
type Runtime struct {
	// Immutable after New.
	clock     Clock
	rand      Rand
	newSignal func(string) Signal
	files     Files
	cfg       Config

	mu sync.Mutex
	// pending are signals to notify once mu is released.
	pending []Signal

	idSeq  uint64 // IDs made so far
	objSeq uint64 // creation order of sandboxes and containers
	ipSeq  uint64 // sandbox IPs handed out

	sandboxes          map[string]*sandbox
	sandboxOrder       []*sandbox // creation order, with tombstones
	sandboxTombs       int        // removed sandboxes still in sandboxOrder
	sandboxCompactAt   int        // compact when sandboxTombs grows past this
	containers         map[string]*container
	containerOrder     []*container         // creation order, with tombstones
	containerTombs     int                  // removed containers still in containerOrder
	containerCompactAt int                  // compact when containerTombs grows past this
	names              map[string]string    // reserved sandbox/container names → ID
	byPod              map[string]*podIndex // live objects by their pod UID label

	exits timeHeap[exitKey] // running containers with a scheduled exit
	logs  timeHeap[logKey]  // running containers with periodic log lines

	images imageStore
	node   NodeModel

	subs []*EventSubscription

	faults faultState

	podCIDR string // from UpdateRuntimeConfig

	loopback *addrPool             // sandbox IPs with Config.LoopbackCIDR, else nil
	byAddr   map[string][]*sandbox // live sandboxes by address (IP or node address), creation order
	watch    func(addr string)     // WatchAddresses' watcher

	streamer streamerSlot // Exec/Attach/PortForward URLs, when served

	// gen counts the changes of the state the truth reads show (a
	// container or sandbox created, started, exited, stopped, removed,
	// resized, first asked to stop or sent SIGTERM, the node model set);
	// view caches the
	// truth views at a generation (truth.go).
	gen  uint64
	view truthView
}

// Compile-time proof that Runtime is a CRI v1 runtime and image service.
var (
	_ cri.RuntimeService      = (*Runtime)(nil)
	_ cri.ImageManagerService = (*Runtime)(nil)
)

// New returns a Runtime configured by cfg (see Config for defaults). It
// panics on an invalid image reference in cfg.Images or cfg.Registry.
func New(cfg Config) *Runtime {
	cfg = cfg.withDefaults()
	r := &Runtime{
		clock:      cfg.Clock,
		rand:       cfg.Rand,
		newSignal:  cfg.NewSignal,
		files:      cfg.Files,
		cfg:        cfg,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		byPod:      map[string]*podIndex{},
		byAddr:     map[string][]*sandbox{},
		names:      map[string]string{},
		node:       *cfg.Node,
	}
	r.faults.retention = cfg.StaleRetention
	if cfg.LoopbackCIDR.IsValid() {
		if err := checkLoopbackCIDR(cfg.LoopbackCIDR); err != nil {
			panic("fakecri: Config.LoopbackCIDR: " + err.Error())
		}
		r.loopback = newAddrPool(cfg.LoopbackCIDR)
	}
	r.images.init()
	for _, img := range cfg.Images {
		ref, err := normalizeRef(img.Ref)
		if err != nil {
			panic("fakecri: Config.Images: " + err.Error())
		}
		r.images.add(ref, img)
	}
	for _, img := range cfg.Registry {
		ref, err := normalizeRef(img.Ref)
		if err != nil {
			panic("fakecri: Config.Registry: " + err.Error())
		}
		r.images.registry[ref] = img
	}
	return r
}

// unlock releases mu and then notifies the signals queued while it was held.
func (r *Runtime) unlock() {
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, s := range pending {
		s.Notify()
	}
}

// now is the clock's time in Unix nanoseconds, clamped to [1, MaxInt64]:
// CRI uses 0 for "not yet", and past the year 2262 time saturates instead
// of wrapping around.
func (r *Runtime) now() int64 {
	t := r.clock.Now()
	switch sec := t.Unix(); {
	case sec >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	case sec < 0:
		return 1
	}
	return max(t.UnixNano(), 1)
}

// newID returns a fresh 64-hex-digit ID: a counter mixed through splitmix64.
func (r *Runtime) newID() string {
	r.idSeq++
	var b [32]byte
	for i := range 4 {
		binary.BigEndian.PutUint64(b[i*8:], splitmix64((r.idSeq<<2|uint64(i))^r.cfg.IDSeed))
	}
	return hex.EncodeToString(b[:])
}

// splitmix64 is a bijective 64-bit mixer.
func splitmix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// nextIP hands out a sandbox IP: the lowest free loopback address with
// Config.LoopbackCIDR (false when none is left), else the next address of
// the pod CIDR, skipping the network and gateway addresses and wrapping
// around when it is exhausted.
func (r *Runtime) nextIP() (string, bool) {
	if r.loopback != nil {
		return r.loopback.take()
	}
	return r.nextPodCIDRIP(), true
}

// nextPodCIDRIP is the next address of Config.PodCIDR.
func (r *Runtime) nextPodCIDRIP() string {
	p := r.cfg.PodCIDR.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	size := uint64(1) << min(hostBits, 32)
	if size < 4 {
		return p.Addr().String()
	}
	r.ipSeq++
	off := 2 + (r.ipSeq-1)%(size-3)
	a := p.Addr().As16()
	for i := 15; i >= 0 && off > 0; i-- {
		sum := uint64(a[i]) + off&0xff
		a[i] = byte(sum)
		off = off>>8 + sum>>8
	}
	addr := netip.AddrFrom16(a)
	if p.Addr().Is4() {
		addr = addr.Unmap()
	}
	return addr.String()
}

// Version answers the runtime's name and version.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	if err := r.enter(ctx, "Version", callTarget{}); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       r.cfg.RuntimeName,
		RuntimeVersion:    r.cfg.RuntimeVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports the RuntimeReady and NetworkReady conditions. It answers
// even when the runtime is set not ready (but not while it restarts).
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	if err := r.enter(ctx, "Status", callTarget{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	runtimeReady, networkReady := !r.faults.runtimeNotReady, !r.faults.networkNotReady
	r.unlock()
	rc := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: runtimeReady}
	if !runtimeReady {
		rc.Reason, rc.Message = "FakeRuntimeNotReady", "fakecri: runtime set not ready"
	}
	nc := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: networkReady}
	if !networkReady {
		nc.Reason, nc.Message = "NetworkPluginNotReady", "Network plugin returns error: cni plugin not initialized"
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{rc, nc}},
	}
	for _, h := range append([]string{""}, r.cfg.RuntimeHandlers...) {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name:     h,
			Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: r.cfg.UserNamespaces, RecursiveReadOnlyMounts: r.cfg.RecursiveReadOnlyMounts},
		})
	}
	if verbose {
		resp.Info = map[string]string{"config": mustJSON(map[string]any{
			"runtimeName":     r.cfg.RuntimeName,
			"runtimeVersion":  r.cfg.RuntimeVersion,
			"runtimeHandlers": r.cfg.RuntimeHandlers,
			"events":          !r.cfg.NoEvents,
			"podCIDR":         r.currentPodCIDR(),
		})}
	}
	return resp, nil
}

// UpdateRuntimeConfig records the pod CIDR.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, runtimeConfig *runtimeapi.RuntimeConfig) error {
	if err := r.enter(ctx, "UpdateRuntimeConfig", callTarget{}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.unlock()
	r.podCIDR = runtimeConfig.GetNetworkConfig().GetPodCidr()
	return nil
}

// currentPodCIDR reads the pod CIDR set by UpdateRuntimeConfig.
func (r *Runtime) currentPodCIDR() string {
	r.mu.Lock()
	defer r.unlock()
	return r.podCIDR
}

// RuntimeConfig answers the cgroup driver: cgroupfs.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	if err := r.enter(ctx, "RuntimeConfig", callTarget{}); err != nil {
		return nil, err
	}
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS},
	}, nil
}

// Close does nothing: an in-process runtime has no connection to close.
func (r *Runtime) Close(ctx context.Context) error { return nil }

// Sync evaluates every container up to the clock's now (exits, OOM kills,
// log lines) without a CRI call; a simulator may call it after time passes.
func (r *Runtime) Sync() {
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
}

// mustJSON renders v, made of maps, strings, numbers and bools, as JSON
// (map keys sorted, so deterministic).
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// durNS converts a duration to nanoseconds as int64.
func durNS(d time.Duration) int64 { return int64(d) }
