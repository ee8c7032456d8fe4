package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ParseNodeIPs parses the --node-ip value: empty (the daemon chooses), one
// IP address, or a dual-stack pair "<ipv4>,<ipv6>" (either order, the
// first is the primary). "0.0.0.0" or "::" alone asks the daemon to choose,
// preferring that family.
func ParseNodeIPs(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("must be one IP address or a dual-stack pair (one IPv4, one IPv6) separated by a comma")
	}
	ips := make([]netip.Addr, 0, len(parts))
	for _, p := range parts {
		ip, err := netip.ParseAddr(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address", p)
		}
		ips = append(ips, ip.Unmap())
	}
	if len(ips) == 2 {
		switch {
		case ips[0].Is4() == ips[1].Is4():
			return nil, fmt.Errorf("a pair must be one IPv4 and one IPv6 address")
		case ips[0].IsUnspecified() || ips[1].IsUnspecified():
			return nil, fmt.Errorf("a dual-stack pair cannot include 0.0.0.0 or ::")
		}
	}
	return ips, nil
}

// ipSources is what choosing the node's IPs looks at: the resolver, the
// default route and the host's own addresses. Tests pass fakes.
type ipSources struct {
	// lookupHost resolves a host name to its addresses.
	lookupHost func(name string) ([]netip.Addr, error)
	// defaultRouteIP is the address of the interface carrying the default
	// route, of the preferred family first.
	defaultRouteIP func(preferIPv6 bool) (netip.Addr, error)
	// hostAddrs are the addresses of the host's interfaces.
	hostAddrs func() ([]netip.Addr, error)
}

// chooseNodeIPs returns the node's IPs, primary first, as the kubelet
// chooses them. Given IPs (--node-ip) are used as they are, once each is
// found among the host's addresses. Otherwise, in order: the host name if
// it is an IP, the host name's addresses (preferring IPv4, or IPv6 when
// --node-ip is "::"), then the address of the default route's interface.
// A chosen address is never loopback, multicast, link-local or
// unspecified; a given one may be loopback (a single-host cluster).
func chooseNodeIPs(given []netip.Addr, hostname string, src ipSources) ([]netip.Addr, error) {
	host, hostErr := src.hostAddrs()
	onHost := func(ip netip.Addr) error {
		if hostErr != nil {
			return fmt.Errorf("list the host's addresses: %w", hostErr)
		}
		if !slices.Contains(host, ip) {
			return fmt.Errorf("%s is not an address of this host", ip)
		}
		return nil
	}
	if len(given) > 0 && !given[0].IsUnspecified() {
		for _, ip := range given {
			if err := unusable(ip, true); err != nil {
				return nil, fmt.Errorf("invalid --node-ip: %s %w", ip, err)
			}
			if err := onHost(ip); err != nil {
				return nil, fmt.Errorf("invalid --node-ip: %w", err)
			}
		}
		return given, nil
	}
	preferV6 := len(given) == 1 && given[0].Is6()
	usable := func(ip netip.Addr) bool { return unusable(ip, false) == nil && onHost(ip) == nil }

	if ip, err := netip.ParseAddr(hostname); err == nil {
		if err := unusable(ip.Unmap(), false); err != nil {
			return nil, fmt.Errorf("node IP: the host name %s %w: pass --node-ip", hostname, err)
		}
		return []netip.Addr{ip.Unmap()}, nil
	}
	var errs []error
	addrs, err := src.lookupHost(hostname)
	if err != nil {
		errs = append(errs, fmt.Errorf("resolve the host name %q: %w", hostname, err))
	}
	var other netip.Addr
	for _, ip := range addrs {
		ip = ip.Unmap()
		if !usable(ip) {
			continue
		}
		if ip.Is6() == preferV6 {
			return []netip.Addr{ip}, nil
		}
		if !other.IsValid() {
			other = ip
		}
	}
	if other.IsValid() {
		return []netip.Addr{other}, nil
	}
	if len(addrs) > 0 && err == nil {
		errs = append(errs, fmt.Errorf("the host name %q resolves to no usable address of this host (%s)", hostname, joinAddrs(addrs)))
	}
	ip, err := src.defaultRouteIP(preferV6)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("default route: %w", err))
	case unusable(ip.Unmap(), false) != nil:
		errs = append(errs, fmt.Errorf("default route: its interface's address %s %w", ip, unusable(ip.Unmap(), false)))
	default:
		return []netip.Addr{ip.Unmap()}, nil
	}
	return nil, fmt.Errorf("node IP: no usable address found (%w): pass --node-ip", errors.Join(errs...))
}

// unusable says why ip cannot be a node IP (nil when it can); loopback
// passes when allowLoopback is set.
func unusable(ip netip.Addr, allowLoopback bool) error {
	switch {
	case !ip.IsValid():
		return errors.New("is not an IP address")
	case ip.IsUnspecified():
		return errors.New("is unspecified (all zeros)")
	case ip.IsLoopback() && !allowLoopback:
		return errors.New("is a loopback address")
	case ip.IsMulticast():
		return errors.New("is a multicast address")
	case ip.IsLinkLocalUnicast():
		return errors.New("is a link-local address")
	}
	return nil
}

func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// hostIPSources are the real resolver, routes and interfaces.
func hostIPSources() ipSources {
	return ipSources{
		lookupHost: func(name string) ([]netip.Addr, error) {
			ips, err := net.LookupIP(name)
			return toAddrs(ips), err
		},
		defaultRouteIP: func(preferIPv6 bool) (netip.Addr, error) {
			bind := net.IPv4zero
			if preferIPv6 {
				bind = net.IPv6zero
			}
			ip, err := utilnet.ResolveBindAddress(bind)
			if err != nil {
				return netip.Addr{}, err
			}
			a, _ := netip.AddrFromSlice(ip)
			return a.Unmap(), nil
		},
		hostAddrs: func() ([]netip.Addr, error) {
			addrs, err := net.InterfaceAddrs()
			if err != nil {
				return nil, err
			}
			var ips []net.IP
			for _, a := range addrs {
				switch v := a.(type) {
				case *net.IPNet:
					ips = append(ips, v.IP)
				case *net.IPAddr:
					ips = append(ips, v.IP)
				}
			}
			return toAddrs(ips), nil
		},
	}
}

func toAddrs(ips []net.IP) []netip.Addr {
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}
