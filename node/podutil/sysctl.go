package podutil

import "strings"

// NormalizeSysctl writes a sysctl name with '.' separators: a name whose
// first separator is '/' ("net/ipv4/conf/eno2.100/rp_filter") has its '/'
// and '.' swapped ("net.ipv4.conf.eno2/100.rp_filter").
func NormalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}
