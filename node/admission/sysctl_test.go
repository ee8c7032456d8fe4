package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// Expected values from k8s.io/kubernetes@v1.37.2 pkg/kubelet/sysctl
// (safe_sysctls.go: the list and its kernel versions; allowlist.go:
// validateSysctl's messages and host namespace rules; Admit's "forbidden
// sysctl: " prefix and reason SysctlForbidden) and
// k8s.io/component-helpers node/util/sysctl (NormalizeName, the
// namespace of each sysctl).

func TestSafeSysctls(t *testing.T) {
	always := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	all := append(append([]string{}, always...), "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem",
		"net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat")
	for _, tt := range []struct {
		kernel string
		want   []string
	}{
		{"6.1.0-13-amd64", all},
		{"4.15.0", all},
		{"4.5.7", append(append([]string{}, always...), "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
			"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")},
		{"", always},
		{"garbage", always},
	} {
		if d := cmp.Diff(tt.want, SafeSysctls(tt.kernel)); d != "" {
			t.Errorf("SafeSysctls(%q) (-want +got):\n%s", tt.kernel, d)
		}
	}
}

func TestSysctlAdmit(t *testing.T) {
	w, err := NewSysctlAllowlist(append(SafeSysctls("6.1.0"), "net.core.somaxconn", "kernel.msg*", "user.max_user_namespaces"))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	tests := []struct {
		name    string
		sysctls []string
		mod     func(*corev1.PodSpec)
		want    string
	}{
		{name: "none"},
		{name: "safe", sysctls: []string{"net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced"}},
		{name: "allowed unsafe, by name and prefix", sysctls: []string{"net.core.somaxconn", "kernel.msgmax"}},
		{name: "slash form is normalized", sysctls: []string{"net/ipv4/tcp_syncookies"}},
		{name: "not allowlisted", sysctls: []string{"kernel.sem"}, want: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "net sysctl with host network", sysctls: []string{"net.core.somaxconn"},
			mod:  func(s *corev1.PodSpec) { s.HostNetwork = true },
			want: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{name: "IPC sysctl with host IPC", sysctls: []string{"kernel.shm_rmid_forced"},
			mod:  func(s *corev1.PodSpec) { s.HostIPC = true },
			want: `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{name: "user sysctl with host users (the default)", sysctls: []string{"user.max_user_namespaces"},
			want: `forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled`},
		{name: "user sysctl in a user namespace", sysctls: []string{"user.max_user_namespaces"},
			mod: func(s *corev1.PodSpec) { s.HostUsers = &no }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{}}}
			for _, s := range tt.sysctls {
				pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: s, Value: "1"})
			}
			if tt.mod != nil {
				tt.mod(&pod.Spec)
			}
			if got := w.Admit(pod); got != tt.want {
				t.Errorf("Admit = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewSysctlAllowlistRejectsUnnamespaced(t *testing.T) {
	if _, err := NewSysctlAllowlist([]string{"vm.swappiness"}); err == nil {
		t.Error("vm.swappiness is not namespaced; want an error")
	}
	if _, err := NewSysctlAllowlist([]string{"fs.mqueue.*", "net.*"}); err != nil {
		t.Errorf("namespaced prefixes: %v", err)
	}
}
