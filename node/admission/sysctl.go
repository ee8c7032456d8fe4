package admission

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// ReasonSysctlForbidden is the reason of a pod that failed admission
// because it sets a sysctl the node does not allow.
const ReasonSysctlForbidden = "SysctlForbidden"

// sysctlNamespace is the kernel namespace a sysctl belongs to ("" when it
// is not known to be namespaced).
type sysctlNamespace string

const (
	nsIPC  sysctlNamespace = "IPC"
	nsNet  sysctlNamespace = "Net"
	nsUTS  sysctlNamespace = "UTS"
	nsUser sysctlNamespace = "User"
)

// safeSysctls are the sysctls every pod may set, with the kernel version
// from which each is namespaced ("" for always), as upstream lists them.
var safeSysctls = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
	{"net.ipv4.tcp_slow_start_after_idle", "4.15"},
	{"net.ipv4.tcp_notsent_lowat", "4.6"},
}

// SafeSysctls returns the safe sysctls for a kernel version ("6.1.0-13-amd64");
// those namespaced only from a later kernel, or all version-bound ones when
// the version cannot be read, are left out.
func SafeSysctls(kernelVersion string) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernelAtLeast(kernelVersion, s.kernel) {
			out = append(out, s.name)
		}
	}
	return out
}

// kernelAtLeast compares the leading major.minor of a kernel version.
func kernelAtLeast(have, want string) bool {
	parse := func(v string) (int, int, bool) {
		major, rest, ok := strings.Cut(v, ".")
		if !ok {
			return 0, 0, false
		}
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		ma, err1 := strconv.Atoi(major)
		mi, err2 := strconv.Atoi(rest[:end])
		return ma, mi, err1 == nil && err2 == nil
	}
	hMa, hMi, ok := parse(have)
	wMa, wMi, _ := parse(want)
	return ok && (hMa > wMa || hMa == wMa && hMi >= wMi)
}

// namespaceOf tells which namespace a (normalized) sysctl or prefix is in.
func namespaceOf(name string) sysctlNamespace {
	switch name {
	case "kernel.domainname":
		return nsUTS
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", "kernel.shm",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg":
		return nsIPC
	}
	for _, p := range []struct {
		prefix string
		ns     sysctlNamespace
	}{{"net.", nsNet}, {"fs.mqueue.", nsIPC}, {"user.", nsUser}} {
		if strings.HasPrefix(name, p.prefix) {
			return p.ns
		}
	}
	return ""
}

// SysctlAllowlist decides which sysctls a pod may set: the safe ones and
// the node's --allowed-unsafe-sysctls (names, or prefixes ending in '*').
type SysctlAllowlist struct {
	names    map[string]sysctlNamespace
	prefixes map[string]sysctlNamespace
}

// NewSysctlAllowlist builds an allowlist from patterns; a pattern naming
// no namespaced sysctl is an error.
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]sysctlNamespace{}, prefixes: map[string]sysctlNamespace{}}
	for _, p := range patterns {
		name := podutil.NormalizeSysctl(p)
		prefixed := false
		if i := strings.IndexByte(name, '*'); i >= 0 {
			name, prefixed = name[:i], true
		}
		ns := namespaceOf(name)
		if ns == "" {
			return nil, fmt.Errorf("sysctl pattern %q: the sysctls %q are not known to be namespaced", p, name)
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.names[name] = ns
		}
	}
	return w, nil
}

// Admit checks a pod's sysctls: each must be allowed, and not be in a
// namespace the pod shares with the node (host network, host IPC, host
// users). It returns "" when the pod may run, else the rejection message.
func (w *SysctlAllowlist) Admit(pod *corev1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(podutil.NormalizeSysctl(s.Name), pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return "forbidden sysctl: " + err.Error()
		}
	}
	return ""
}

// check decides about one sysctl.
func (w *SysctlAllowlist) check(name string, hostNet, hostIPC, hostUsers bool) error {
	ns, found := w.names[name]
	if !found {
		// The longest matching prefix decides (deterministically).
		best := ""
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) && len(p) >= len(best) && (len(p) > len(best) || p < best) {
				best, ns, found = p, pns, true
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == nsIPC && hostIPC, ns == nsNet && hostNet, ns == nsUser && hostUsers:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}
