package podutil

import "testing"

func TestNormalizeSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel":                           "kernel",
		"":                                 "",
	} {
		if got := NormalizeSysctl(in); got != want {
			t.Errorf("NormalizeSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}
