package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The expected values below are what the upstream kubelet v1.37.2 sends,
// read from k8s.io/kubernetes@v1.37.2:
//   - pkg/kubelet/kuberuntime/security_context.go
//     (determineEffectiveSecurityContext, convertToRuntimeSecurityContext):
//     the merged context, the image's user when no runAsUser, supplemental
//     groups fsGroup first then supplementalGroups, their policy,
//     NoNewPrivs, masked and read-only paths;
//   - pkg/securitycontext/util.go (DetermineEffectiveSecurityContext,
//     AddNoNewPrivileges, ConvertToRuntimeMaskedPaths/ReadonlyPaths): which
//     fields the pod level contributes, the default path lists;
//   - pkg/kubelet/kuberuntime/helpers.go (getImageUser: an image naming no
//     user is root; getSeccompProfile/fieldSeccompProfile: container, then
//     pod, then the node default; Localhost under <root-dir>/seccomp;
//     getAppArmorProfile and pkg/security/apparmor GetProfile: container,
//     then the deprecated annotation, then pod);
//   - pkg/kubelet/kuberuntime/kuberuntime_sandbox.go
//     (generatePodSandboxLinuxConfig): the sandbox's context.

// baseContainerSC is the context of a container that sets nothing, in a
// pod that sets nothing, whose image names no user (so root).
func baseContainerSC() *runtimeapi.LinuxContainerSecurityContext {
	return &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{
			Network:       runtimeapi.NamespaceMode_POD,
			Pid:           runtimeapi.NamespaceMode_CONTAINER,
			Ipc:           runtimeapi.NamespaceMode_POD,
			UsernsOptions: nodeUserns(),
		},
		RunAsUser:     &runtimeapi.Int64Value{Value: 0},
		Seccomp:       &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
		MaskedPaths:   append([]string(nil), defaultMaskedPaths...),
		ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
	}
}

func TestContainerSecurityContext(t *testing.T) {
	unmaskedProc := corev1.UnmaskedProcMount
	strict := corev1.SupplementalGroupsPolicyStrict
	tests := []struct {
		name  string
		psc   *corev1.PodSecurityContext
		csc   *corev1.SecurityContext
		annot map[string]string
		image ImageUser
		node  func(*NodeInfo)
		want  func(*runtimeapi.LinuxContainerSecurityContext)
	}{
		{name: "nothing set: image user root, unconfined, default paths",
			want: func(*runtimeapi.LinuxContainerSecurityContext) {}},
		{name: "image with a numeric user",
			image: ImageUser{UID: ptr(int64(1000))},
			want:  func(w *runtimeapi.LinuxContainerSecurityContext) { w.RunAsUser.Value = 1000 }},
		{name: "image with a user name",
			image: ImageUser{Username: "nobody"},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.RunAsUser, w.RunAsUsername = nil, "nobody"
			}},
		{name: "pod users and groups; the image's user is not used",
			psc:   &corev1.PodSecurityContext{RunAsUser: ptr(int64(1001)), RunAsGroup: ptr(int64(2002)), FSGroup: ptr(int64(3003)), SupplementalGroups: []int64{5, 4}},
			image: ImageUser{UID: ptr(int64(7))},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.RunAsUser = &runtimeapi.Int64Value{Value: 1001}
				w.RunAsGroup = &runtimeapi.Int64Value{Value: 2002}
				w.SupplementalGroups = []int64{3003, 5, 4}
			}},
		{name: "container users override the pod's",
			psc: &corev1.PodSecurityContext{RunAsUser: ptr(int64(1001)), RunAsGroup: ptr(int64(2002))},
			csc: &corev1.SecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2))},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.RunAsUser = &runtimeapi.Int64Value{Value: 1}
				w.RunAsGroup = &runtimeapi.Int64Value{Value: 2}
			}},
		{name: "strict supplemental groups policy",
			psc: &corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
			}},
		{name: "privileged, read-only root, no privilege escalation, capabilities",
			csc: &corev1.SecurityContext{
				Privileged: ptr(true), ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL", "CHOWN"}},
			},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Privileged, w.ReadonlyRootfs, w.NoNewPrivs = true, true, true
				w.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL", "CHOWN"}}
			}},
		{name: "allowPrivilegeEscalation true keeps NoNewPrivs off",
			csc:  &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(true)},
			want: func(*runtimeapi.LinuxContainerSecurityContext) {}},
		{name: "empty capabilities are sent as empty lists",
			csc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{}, DropCapabilities: []string{}}
			}},
		{name: "unmasked /proc",
			csc: &corev1.SecurityContext{ProcMount: &unmaskedProc},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.MaskedPaths, w.ReadonlyPaths = []string{}, []string{}
			}},
		{name: "thermal throttle paths of the node are masked too",
			node: func(n *NodeInfo) { n.ThermalThrottlePaths = []string{"/sys/devices/system/cpu/cpu0/thermal_throttle"} },
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.MaskedPaths = append(w.MaskedPaths, "/sys/devices/system/cpu/cpu0/thermal_throttle")
			}},
		{name: "SELinux: the container's replaces the pod's",
			psc: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "u", Level: "s0:c1"}},
			csc: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "t"}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.SelinuxOptions = &runtimeapi.SELinuxOption{Type: "t"}
			}},
		{name: "SELinux from the pod",
			psc: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0"}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.SelinuxOptions = &runtimeapi.SELinuxOption{User: "u", Role: "r", Type: "t", Level: "s0"}
			}},
		{name: "seccomp: node default RuntimeDefault",
			node: func(n *NodeInfo) { n.SeccompDefault = true },
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			}},
		{name: "seccomp: pod Localhost under the default root",
			psc: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p/audit.json")}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/p/audit.json"}
			}},
		{name: "seccomp: container Unconfined beats pod RuntimeDefault and the node default",
			psc:  &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			csc:  &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			node: func(n *NodeInfo) { n.SeccompDefault = true },
			want: func(*runtimeapi.LinuxContainerSecurityContext) {}},
		{name: "seccomp: Localhost under the node's root",
			csc:  &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("x.json")}},
			node: func(n *NodeInfo) { n.SeccompProfileRoot = "/etc/lockstep/seccomp" },
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/etc/lockstep/seccomp/x.json"}
			}},
		{name: "AppArmor: pod RuntimeDefault",
			psc: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
				w.ApparmorProfile = "runtime/default"
			}},
		{name: "AppArmor: the annotation beats the pod field",
			psc:   &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			annot: map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-deny"},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny"}
				w.ApparmorProfile = "localhost/k8s-deny"
			}},
		{name: "AppArmor: an invalid annotation falls through to the pod",
			psc:   &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
			annot: map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "bogus"},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
				w.ApparmorProfile = "unconfined"
			}},
		{name: "AppArmor: the container's field beats the annotation",
			csc:   &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
			annot: map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
				w.ApparmorProfile = "unconfined"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Annotations = tt.annot
				p.Spec.SecurityContext = tt.psc
				p.Spec.Containers[0].SecurityContext = tt.csc
			})
			node := testNode()
			if tt.node != nil {
				tt.node(&node)
			}
			want := baseContainerSC()
			tt.want(want)
			got, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{ImageUser: tt.image}, node)
			if err != nil {
				t.Fatal(err)
			}
			diffProto(t, want, got.GetLinux().GetSecurityContext())
		})
	}
}

func TestContainerSecurityContextErrors(t *testing.T) {
	bogus := corev1.SupplementalGroupsPolicy("Bogus")
	tests := []struct {
		name string
		psc  *corev1.PodSecurityContext
		csc  *corev1.SecurityContext
		want string
	}{
		{"seccomp Localhost without a profile",
			nil, &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}},
			"seccompProfile: type Localhost needs a localhostProfile"},
		{"AppArmor Localhost without a profile",
			&corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost}}, nil,
			"appArmorProfile: type Localhost needs a localhostProfile"},
		{"unknown AppArmor type",
			nil, &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "Other"}},
			`appArmorProfile: type "Other" is not supported`},
		{"unknown supplemental groups policy",
			&corev1.PodSecurityContext{SupplementalGroupsPolicy: &bogus}, nil,
			`supplementalGroupsPolicy "Bogus" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = tt.psc
				p.Spec.Containers[0].SecurityContext = tt.csc
			})
			_, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, testNode())
			want := `container "app" of pod prod/web: ` + tt.want
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v, want %q", err, want)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	// Cases from verifyRunAsNonRoot (security_context_others.go) and
	// getImageUser (helpers.go: no user in the image means root).
	tests := []struct {
		name    string
		psc     *corev1.PodSecurityContext
		csc     *corev1.SecurityContext
		image   ImageUser
		wantErr string
	}{
		{name: "not asked", image: ImageUser{}},
		{name: "pod asks, image names no user (root)",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, wantErr: "the image runs as root"},
		{name: "pod asks, image user 0",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, image: ImageUser{UID: ptr(int64(0))}, wantErr: "the image runs as root"},
		{name: "pod asks, image user 1000",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, image: ImageUser{UID: ptr(int64(1000))}},
		{name: "pod asks, image user by name",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, image: ImageUser{Username: "app"}, wantErr: `image user "app" is not numeric`},
		{name: "image user out of range",
			csc: &corev1.SecurityContext{RunAsNonRoot: ptr(true)}, image: ImageUser{UID: ptr(int64(1) << 32)}, wantErr: "is not in 1..2147483647"},
		{name: "runAsUser 0 breaks it",
			csc: &corev1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(0))}, image: ImageUser{UID: ptr(int64(5))}, wantErr: "runAsUser 0 is root"},
		{name: "pod runAsUser 1000 satisfies it whatever the image",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(1000))}},
		{name: "container false overrides pod true",
			psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, csc: &corev1.SecurityContext{RunAsNonRoot: ptr(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = tt.psc
				p.Spec.Containers[0].SecurityContext = tt.csc
			})
			err := VerifyRunAsNonRoot(pod, &pod.Spec.Containers[0], tt.image)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantErr != "" {
				if _, cerr := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{ImageUser: tt.image}, testNode()); cerr == nil {
					t.Fatal("ContainerConfigWith built a config for a container that would run as root")
				}
			}
		})
	}
}

func TestSandboxSecurityContext(t *testing.T) {
	strict := corev1.SupplementalGroupsPolicyStrict
	base := func() *runtimeapi.LinuxSandboxSecurityContext {
		return &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()},
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		}
	}
	tests := []struct {
		name string
		mod  func(*corev1.Pod)
		want func(*runtimeapi.LinuxSandboxSecurityContext)
	}{
		{"nothing set", func(*corev1.Pod) {}, func(*runtimeapi.LinuxSandboxSecurityContext) {}},
		{"users, groups (fsGroup first), policy, SELinux",
			func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{
					RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(2)), FSGroup: ptr(int64(3)), SupplementalGroups: []int64{4},
					SupplementalGroupsPolicy: &strict, SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c2"},
					// Not the sandbox's: seccomp stays RuntimeDefault.
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				}
			},
			func(w *runtimeapi.LinuxSandboxSecurityContext) {
				w.RunAsUser = &runtimeapi.Int64Value{Value: 1}
				w.RunAsGroup = &runtimeapi.Int64Value{Value: 2}
				w.SupplementalGroups = []int64{3, 4}
				w.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
				w.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c2"}
			}},
		{"a privileged init container makes the sandbox privileged",
			func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}
			},
			func(w *runtimeapi.LinuxSandboxSecurityContext) { w.Privileged = true }},
		{"a privileged ephemeral container too",
			func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "dbg", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}}
			},
			func(w *runtimeapi.LinuxSandboxSecurityContext) { w.Privileged = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(tt.mod)
			want := base()
			tt.want(want)
			got, err := SandboxConfig(pod, 0, testNode(), "")
			if err != nil {
				t.Fatal(err)
			}
			diffProto(t, want, got.GetLinux().GetSecurityContext())
		})
	}
}

// TestSandboxSysctls: the pod's sysctls go to the sandbox by name with '.'
// separators (kuberuntime_sandbox.go generatePodSandboxLinuxConfig after
// kuberuntime_manager.go ConvertPodSysctlsVariableToDotsSeparator).
func TestSandboxSysctls(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
			{Name: "net.core.somaxconn", Value: "1024"},
			{Name: "net/ipv4/conf/eno2.100/rp_filter", Value: "1"},
		}}
	})
	got, err := SandboxConfig(pod, 0, testNode(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"net.core.somaxconn": "1024", "net.ipv4.conf.eno2/100.rp_filter": "1"}
	diffProto(t, want, got.GetLinux().GetSysctls())
}
