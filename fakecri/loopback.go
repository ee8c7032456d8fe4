package fakecri

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// DefaultLoopbackCIDR is where sandbox addresses come from on a loopback
// pod network ("--pod-network=loopback"): 127.88.0.2 upward, the loopback
// twin of containerd's 10.88.0.0/16.
var DefaultLoopbackCIDR = netip.MustParsePrefix("127.88.0.0/16")

// loopbackNet is 127.0.0.0/8, which Linux routes to the lo interface
// whole: any of its addresses can be bound without configuring anything.
var loopbackNet = netip.MustParsePrefix("127.0.0.0/8")

// ParsePodNetwork parses a pod network setting: "" or "off" (no served
// network: the invalid prefix), "loopback" (DefaultLoopbackCIDR), or an
// IPv4 prefix inside 127.0.0.0/8 with room for at least one sandbox
// (e.g. "127.89.0.0/16", for a second runtime on the same host).
func ParsePodNetwork(s string) (netip.Prefix, error) {
	switch strings.TrimSpace(s) {
	case "", "off":
		return netip.Prefix{}, nil
	case "loopback":
		return DefaultLoopbackCIDR, nil
	}
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("pod network %q: want off, loopback or a prefix inside 127.0.0.0/8: %w", s, err)
	}
	if err := checkLoopbackCIDR(p); err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// ParseNetwork parses a served network's two settings: the pod network
// (ParsePodNetwork) and the address host-network pods answer at ("" for
// none; it needs a pod network). They become Config.LoopbackCIDR and
// Config.NodeAddress.
func ParseNetwork(podNetwork, hostAddress string) (netip.Prefix, netip.Addr, error) {
	p, err := ParsePodNetwork(podNetwork)
	if err != nil || hostAddress == "" {
		return p, netip.Addr{}, err
	}
	if !p.IsValid() {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("host-network address %q needs a pod network", hostAddress)
	}
	a, err := netip.ParseAddr(hostAddress)
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, fmt.Errorf("host-network address: %w", err)
	}
	return p, a, nil
}

// checkLoopbackCIDR refuses a prefix outside 127.0.0.0/8 or too small to
// hold a sandbox (its first two and last addresses are never handed out).
func checkLoopbackCIDR(p netip.Prefix) error {
	if !p.Addr().Is4() || p.Bits() < loopbackNet.Bits() || !loopbackNet.Contains(p.Addr()) {
		return fmt.Errorf("pod network %s: want an IPv4 prefix inside %s", p, loopbackNet)
	}
	if p.Bits() > 30 {
		return fmt.Errorf("pod network %s: too small, want at most /30", p)
	}
	return nil
}

// addrPool hands out the addresses of a loopback prefix, the lowest free
// one first, skipping the prefix's first two and last addresses and
// 127.0.0.1; a released address is handed out again.
type addrPool struct {
	base     uint32 // the prefix's first address
	size     uint64 // addresses in the prefix
	next     uint64 // lowest offset never handed out
	free     offsetHeap
	inUse    map[uint64]bool
	hostAddr uint64 // offset of 127.0.0.1 (skipped), or 0
}

func newAddrPool(p netip.Prefix) *addrPool {
	p = p.Masked()
	a := p.Addr().As4()
	pool := &addrPool{base: binary.BigEndian.Uint32(a[:]), size: 1 << (32 - p.Bits()), next: 2, inUse: map[uint64]bool{}}
	if localhost := netip.AddrFrom4([4]byte{127, 0, 0, 1}); p.Contains(localhost) {
		pool.hostAddr = uint64(0x7f000001 - pool.base)
	}
	return pool
}

// take returns the lowest free address, and false when none is left.
func (p *addrPool) take() (string, bool) {
	var off uint64
	if len(p.free) > 0 {
		off = heap.Pop(&p.free).(uint64)
	} else {
		if p.next == p.hostAddr {
			p.next++
		}
		if p.next >= p.size-1 {
			return "", false
		}
		off = p.next
		p.next++
	}
	p.inUse[off] = true
	return p.addr(off), true
}

// release gives addr back.
func (p *addrPool) release(addr string) {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return
	}
	b := a.As4()
	off := uint64(binary.BigEndian.Uint32(b[:]) - p.base)
	if p.inUse[off] {
		delete(p.inUse, off)
		heap.Push(&p.free, off)
	}
}

func (p *addrPool) addr(off uint64) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], p.base+uint32(off))
	return netip.AddrFrom4(b).String()
}

// String is the range handed out, "first-last".
func (p *addrPool) String() string {
	first := uint64(2)
	if first == p.hostAddr {
		first++
	}
	return p.addr(first) + "-" + p.addr(p.size-2)
}

// offsetHeap is a min-heap of address offsets (container/heap).
type offsetHeap []uint64

func (h offsetHeap) Len() int           { return len(h) }
func (h offsetHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h offsetHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *offsetHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *offsetHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
