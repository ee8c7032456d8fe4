package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ptr[T any](v T) *T { return &v }

// basePod has an init container and two regular containers and uses only
// what the agent supports.
func basePod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
		Containers:     []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
	}}
}

func podSC(f func(*corev1.PodSecurityContext)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		f(p.Spec.SecurityContext)
	}
}

// appSC sets a security context on the second regular container.
func appSC(f func(*corev1.SecurityContext)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		sc := &corev1.SecurityContext{}
		f(sc)
		p.Spec.Containers[1].SecurityContext = sc
	}
}

func side(f func(*corev1.Container)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { f(&p.Spec.Containers[1]) }
}

func TestCheck(t *testing.T) {
	const c1 = "spec.containers[1]."
	cases := []struct {
		name    string
		mutate  func(*corev1.Pod)
		ignored []string
		refused []string
	}{
		{name: "supported fields only", mutate: func(*corev1.Pod) {}},
		{name: "what the apiserver defaults is not flagged", mutate: func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(false),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
			p.Spec.HostUsers = ptr(true)
			p.Spec.RuntimeClassName = ptr("")
			for i := range p.Spec.Containers {
				c := &p.Spec.Containers[i]
				c.TerminationMessagePath = corev1.TerminationMessagePathDefault
				c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
				c.SecurityContext = &corev1.SecurityContext{Privileged: ptr(false), AllowPrivilegeEscalation: ptr(true),
					ReadOnlyRootFilesystem: ptr(false), ProcMount: ptr(corev1.DefaultProcMount),
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
			}
		}},

		// Ignored pod-level fields.
		{name: "volumes", mutate: func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "v"}} }, ignored: []string{"spec.volumes"}},
		{name: "hostAliases", mutate: func(p *corev1.Pod) { p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1"}} }, ignored: []string{"spec.hostAliases"}},
		{name: "imagePullSecrets", mutate: func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}} },
			ignored: []string{"spec.imagePullSecrets"}},
		{name: "activeDeadlineSeconds", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(5)) }, ignored: []string{"spec.activeDeadlineSeconds"}},
		{name: "overhead", mutate: func(p *corev1.Pod) { p.Spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("1")} }, ignored: []string{"spec.overhead"}},
		{name: "pod resources", mutate: func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{} }, ignored: []string{"spec.resources"}},
		{name: "resourceClaims", mutate: func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} },
			ignored: []string{"spec.resourceClaims"}},
		{name: "fsGroup", mutate: podSC(func(c *corev1.PodSecurityContext) { c.FSGroup = ptr(int64(2000)) }), ignored: []string{"spec.securityContext.fsGroup"}},
		{name: "fsGroupChangePolicy", mutate: podSC(func(c *corev1.PodSecurityContext) { c.FSGroupChangePolicy = ptr(corev1.FSGroupChangeAlways) }),
			ignored: []string{"spec.securityContext.fsGroupChangePolicy"}},
		{name: "supplementalGroups", mutate: podSC(func(c *corev1.PodSecurityContext) { c.SupplementalGroups = []int64{5} }),
			ignored: []string{"spec.securityContext.supplementalGroups"}},
		{name: "supplementalGroupsPolicy", mutate: podSC(func(c *corev1.PodSecurityContext) {
			c.SupplementalGroupsPolicy = ptr(corev1.SupplementalGroupsPolicyStrict)
		}),
			ignored: []string{"spec.securityContext.supplementalGroupsPolicy"}},
		{name: "sysctls", mutate: podSC(func(c *corev1.PodSecurityContext) {
			c.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		}),
			ignored: []string{"spec.securityContext.sysctls"}},
		{name: "seLinuxChangePolicy", mutate: podSC(func(c *corev1.PodSecurityContext) { c.SELinuxChangePolicy = ptr(corev1.SELinuxChangePolicyRecursive) }),
			ignored: []string{"spec.securityContext.seLinuxChangePolicy"}},
		{name: "pod windowsOptions", mutate: podSC(func(c *corev1.PodSecurityContext) { c.WindowsOptions = &corev1.WindowsSecurityContextOptions{} }),
			ignored: []string{"spec.securityContext.windowsOptions"}},
		{name: "ephemeral containers", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{}, {}}
		}, ignored: []string{"spec.ephemeralContainers[0]", "spec.ephemeralContainers[1]"}},

		// Refused pod-level fields.
		{name: "pod runAsUser", mutate: podSC(func(c *corev1.PodSecurityContext) { c.RunAsUser = ptr(int64(1000)) }), refused: []string{"spec.securityContext.runAsUser"}},
		{name: "pod runAsGroup", mutate: podSC(func(c *corev1.PodSecurityContext) { c.RunAsGroup = ptr(int64(1000)) }), refused: []string{"spec.securityContext.runAsGroup"}},
		{name: "pod runAsNonRoot", mutate: podSC(func(c *corev1.PodSecurityContext) { c.RunAsNonRoot = ptr(true) }), refused: []string{"spec.securityContext.runAsNonRoot"}},
		{name: "pod seLinuxOptions", mutate: podSC(func(c *corev1.PodSecurityContext) { c.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0"} }),
			refused: []string{"spec.securityContext.seLinuxOptions"}},
		{name: "pod seccomp RuntimeDefault", mutate: podSC(func(c *corev1.PodSecurityContext) {
			c.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}), refused: []string{"spec.securityContext.seccompProfile"}},
		{name: "pod AppArmor Localhost", mutate: podSC(func(c *corev1.PodSecurityContext) {
			c.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("p")}
		}), refused: []string{"spec.securityContext.appArmorProfile"}},
		{name: "hostUsers false", mutate: func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }, refused: []string{"spec.hostUsers"}},
		{name: "runtimeClassName", mutate: func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr("gvisor") }, refused: []string{"spec.runtimeClassName"}},

		// Ignored container fields.
		{name: "lifecycle", mutate: side(func(c *corev1.Container) { c.Lifecycle = &corev1.Lifecycle{} }), ignored: []string{c1 + "lifecycle"}},
		{name: "volumeMounts", mutate: side(func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{{Name: "v"}} }), ignored: []string{c1 + "volumeMounts"}},
		{name: "volumeDevices", mutate: side(func(c *corev1.Container) { c.VolumeDevices = []corev1.VolumeDevice{{Name: "v"}} }), ignored: []string{c1 + "volumeDevices"}},
		{name: "restartPolicyRules", mutate: side(func(c *corev1.Container) { c.RestartPolicyRules = []corev1.ContainerRestartRule{{}} }),
			ignored: []string{c1 + "restartPolicyRules"}},
		{name: "resizePolicy", mutate: side(func(c *corev1.Container) { c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu"}} }),
			ignored: []string{c1 + "resizePolicy"}},
		{name: "resource claims", mutate: side(func(c *corev1.Container) { c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} }),
			ignored: []string{c1 + "resources.claims"}},
		{name: "hugepages", mutate: side(func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi"), "memory": resource.MustParse("1Gi")}
			c.Resources.Requests = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}
		}), ignored: []string{c1 + "resources.limits.hugepages-*", c1 + "resources.requests.hugepages-*"}},
		{name: "terminationMessagePath elsewhere", mutate: side(func(c *corev1.Container) { c.TerminationMessagePath = "/tmp/msg" }),
			ignored: []string{c1 + "terminationMessagePath"}},
		{name: "terminationMessagePolicy from logs", mutate: side(func(c *corev1.Container) {
			c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}), ignored: []string{c1 + "terminationMessagePolicy"}},
		{name: "privileged", mutate: appSC(func(s *corev1.SecurityContext) { s.Privileged = ptr(true) }), ignored: []string{c1 + "securityContext.privileged"}},
		{name: "capabilities add", mutate: appSC(func(s *corev1.SecurityContext) {
			s.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}
		}), ignored: []string{c1 + "securityContext.capabilities.add"}},
		{name: "procMount Unmasked", mutate: appSC(func(s *corev1.SecurityContext) { s.ProcMount = ptr(corev1.UnmaskedProcMount) }),
			ignored: []string{c1 + "securityContext.procMount"}},
		{name: "container windowsOptions", mutate: appSC(func(s *corev1.SecurityContext) { s.WindowsOptions = &corev1.WindowsSecurityContextOptions{} }),
			ignored: []string{c1 + "securityContext.windowsOptions"}},
		{name: "sidecar (restartable init container)", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}, ignored: []string{"spec.initContainers[0].restartPolicy"}},

		// Refused container fields.
		{name: "runAsUser", mutate: appSC(func(s *corev1.SecurityContext) { s.RunAsUser = ptr(int64(1000)) }), refused: []string{c1 + "securityContext.runAsUser"}},
		{name: "runAsGroup", mutate: appSC(func(s *corev1.SecurityContext) { s.RunAsGroup = ptr(int64(1000)) }), refused: []string{c1 + "securityContext.runAsGroup"}},
		{name: "runAsNonRoot", mutate: appSC(func(s *corev1.SecurityContext) { s.RunAsNonRoot = ptr(true) }), refused: []string{c1 + "securityContext.runAsNonRoot"}},
		{name: "readOnlyRootFilesystem", mutate: appSC(func(s *corev1.SecurityContext) { s.ReadOnlyRootFilesystem = ptr(true) }),
			refused: []string{c1 + "securityContext.readOnlyRootFilesystem"}},
		{name: "allowPrivilegeEscalation false", mutate: appSC(func(s *corev1.SecurityContext) { s.AllowPrivilegeEscalation = ptr(false) }),
			refused: []string{c1 + "securityContext.allowPrivilegeEscalation"}},
		{name: "capabilities drop", mutate: appSC(func(s *corev1.SecurityContext) {
			s.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}), refused: []string{c1 + "securityContext.capabilities.drop"}},
		{name: "seLinuxOptions", mutate: appSC(func(s *corev1.SecurityContext) { s.SELinuxOptions = &corev1.SELinuxOptions{Type: "t"} }),
			refused: []string{c1 + "securityContext.seLinuxOptions"}},
		{name: "seccomp Localhost", mutate: appSC(func(s *corev1.SecurityContext) {
			s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")}
		}), refused: []string{c1 + "securityContext.seccompProfile"}},
		{name: "AppArmor RuntimeDefault", mutate: appSC(func(s *corev1.SecurityContext) {
			s.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		}), refused: []string{c1 + "securityContext.appArmorProfile"}},
		{name: "init container runAsNonRoot", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr(true)}
		}, refused: []string{"spec.initContainers[0].securityContext.runAsNonRoot"}},

		{name: "both kinds, in spec order", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
			p.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{}
		},
			ignored: []string{"spec.volumes", "spec.initContainers[0].lifecycle"},
			refused: []string{"spec.securityContext.runAsNonRoot", "spec.containers[0].securityContext.capabilities.drop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := basePod()
			tc.mutate(p)
			got := Check(p)
			want := Unsupported{Ignored: tc.ignored, Refused: tc.refused}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			if got.Rejected() != (len(tc.refused) > 0) {
				t.Errorf("Rejected() = %v with refused fields %v", got.Rejected(), tc.refused)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	u := Unsupported{Ignored: []string{"spec.volumes", "spec.containers[0].livenessProbe"}, Refused: []string{"spec.securityContext.runAsNonRoot"}}
	if got, want := u.WarningMessage(), "lockstep does not support these pod fields yet and runs the pod without them: spec.volumes, spec.containers[0].livenessProbe"; got != want {
		t.Errorf("WarningMessage = %q, want %q", got, want)
	}
	if got, want := u.RejectionMessage(), "lockstep cannot enforce these pod fields yet and will not run the pod with less protection than it asks for: spec.securityContext.runAsNonRoot"; got != want {
		t.Errorf("RejectionMessage = %q, want %q", got, want)
	}
	if (Unsupported{}).WarningMessage() != "" || (Unsupported{}).RejectionMessage() != "" {
		t.Error("messages of a pod with nothing unsupported must be empty")
	}
}
