package daemon

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestNodeIPFlag(t *testing.T) {
	cases := []struct {
		value string
		want  string // "" when valid
	}{
		{"", ""},
		{"10.0.0.5", ""},
		{"fd00::5", ""},
		{"10.0.0.5,fd00::5", ""},
		{"fd00::5, 10.0.0.5", ""},
		{"::", ""},
		{"10.0.0.300", `invalid --node-ip=10.0.0.300: "10.0.0.300" is not an IP address`},
		{"10.0.0.5,10.0.0.6", "invalid --node-ip=10.0.0.5,10.0.0.6: a pair must be one IPv4 and one IPv6 address"},
		{"10.0.0.5,fd00::5,10.0.0.6", "invalid --node-ip=10.0.0.5,fd00::5,10.0.0.6: must be one IP address or a dual-stack pair (one IPv4, one IPv6) separated by a comma"},
		{"0.0.0.0,fd00::5", "invalid --node-ip=0.0.0.0,fd00::5: a dual-stack pair cannot include 0.0.0.0 or ::"},
	}
	for _, tc := range cases {
		o := Defaults()
		o.NodeIP = tc.value
		o.SetOrigin("node-ip", "--node-ip")
		got := ""
		if err := o.Validate(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("--node-ip=%q: got %q, want %q", tc.value, got, tc.want)
		}
	}
}

func TestChooseNodeIPs(t *testing.T) {
	host := addrs("127.0.0.1", "::1", "10.0.0.5", "fd00::5", "192.168.1.9", "fe80::1")
	type world struct {
		names  map[string][]netip.Addr
		route4 string
		route6 string
	}
	normal := world{
		names:  map[string][]netip.Addr{"node-a": addrs("fd00::5", "10.0.0.5")},
		route4: "192.168.1.9", route6: "fd00::5",
	}
	cases := []struct {
		name     string
		flag     string
		hostname string
		w        world
		want     []string
		wantErr  string
	}{
		{name: "given one", flag: "10.0.0.5", hostname: "node-a", w: normal, want: []string{"10.0.0.5"}},
		{name: "given dual-stack pair", flag: "fd00::5,10.0.0.5", hostname: "node-a", w: normal, want: []string{"fd00::5", "10.0.0.5"}},
		{name: "given loopback (single-host cluster)", flag: "127.0.0.1", hostname: "node-a", w: normal, want: []string{"127.0.0.1"}},
		{name: "given not on this host", flag: "10.9.9.9", hostname: "node-a", w: normal, wantErr: "invalid --node-ip: 10.9.9.9 is not an address of this host"},
		{name: "given link-local", flag: "fe80::1", hostname: "node-a", w: normal, wantErr: "invalid --node-ip: fe80::1 is a link-local address"},
		{name: "host name's IPv4 preferred", hostname: "node-a", w: normal, want: []string{"10.0.0.5"}},
		{name: ":: prefers the host name's IPv6", flag: "::", hostname: "node-a", w: normal, want: []string{"fd00::5"}},
		{name: "host name is an IP", hostname: "10.0.0.5", w: normal, want: []string{"10.0.0.5"}},
		{name: "host name is loopback", hostname: "127.0.0.1", w: normal, wantErr: "node IP: the host name 127.0.0.1 is a loopback address: pass --node-ip"},
		{name: "host name resolves to loopback only: default route", hostname: "node-a",
			w: world{names: map[string][]netip.Addr{"node-a": addrs("127.0.1.1", "::1")}, route4: "192.168.1.9"}, want: []string{"192.168.1.9"}},
		{name: "host name resolves to another host's address: default route", hostname: "node-a",
			w: world{names: map[string][]netip.Addr{"node-a": addrs("10.9.9.9")}, route4: "192.168.1.9"}, want: []string{"192.168.1.9"}},
		{name: "host name unknown: default route", hostname: "node-b", w: normal, want: []string{"192.168.1.9"}},
		{name: "host name unknown, :: prefers the IPv6 default route", flag: "::", hostname: "node-b", w: normal, want: []string{"fd00::5"}},
		{name: "nothing usable: never loopback", hostname: "node-a",
			w:       world{names: map[string][]netip.Addr{"node-a": addrs("127.0.1.1")}, route4: "127.0.0.1"},
			wantErr: "the host name \"node-a\" resolves to no usable address of this host (127.0.1.1)\ndefault route: its interface's address 127.0.0.1 is a loopback address): pass --node-ip"},
		{name: "no name, no route", hostname: "node-b", w: world{},
			wantErr: "node IP: no usable address found (resolve the host name \"node-b\": no such host\ndefault route: no default route): pass --node-ip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			given, err := ParseNodeIPs(tc.flag)
			if err != nil {
				t.Fatal(err)
			}
			src := ipSources{
				lookupHost: func(name string) ([]netip.Addr, error) {
					if a, ok := tc.w.names[name]; ok {
						return a, nil
					}
					return nil, errors.New("no such host")
				},
				defaultRouteIP: func(preferIPv6 bool) (netip.Addr, error) {
					first, second := tc.w.route4, tc.w.route6
					if preferIPv6 {
						first, second = second, first
					}
					for _, r := range []string{first, second} {
						if r != "" {
							return netip.MustParseAddr(r), nil
						}
					}
					return netip.Addr{}, errors.New("no default route")
				},
				hostAddrs: func() ([]netip.Addr, error) { return host, nil },
			}
			ips, err := chooseNodeIPs(given, tc.hostname, src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(ips))
			for i, ip := range ips {
				got[i] = ip.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("node IPs (-want +got):\n%s", diff)
			}
		})
	}
}
