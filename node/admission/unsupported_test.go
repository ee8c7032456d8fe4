package admission

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/podspec"
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
		{name: "supported volumes", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}},
			}
		}},
		{name: "unsupported volumes and volume options", mutate: func(p *corev1.Pod) {
			mem := resource.MustParse("1Mi")
			p.Spec.Volumes = []corev1.Volume{
				{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}, // the volume manager checks its PersistentVolume's type
				{Name: "none"},
				{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &mem}}},
				{Name: "sa", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{}}, {ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "ctb"}},
				}}}},
			}
		}, ignored: []string{"spec.volumes[1]"}}, // claims, a disk emptyDir's sizeLimit (eviction) and clusterTrustBundle are honoured
		{name: "hostAliases are honoured (the managed hosts file), not flagged", mutate: func(p *corev1.Pod) { p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1"}} }},
		{name: "imagePullSecrets are honoured (node/images)", mutate: func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}} }},
		{name: "activeDeadlineSeconds is honoured", mutate: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(5)) }},
		{name: "overhead", mutate: func(p *corev1.Pod) { p.Spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("1")} }}, // sent to the runtime (podspec.SandboxResources)
		{name: "pod resources", mutate: func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{} }},                // pod-level resources: QoS and cgroups
		{name: "resourceClaims", mutate: func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} },
			ignored: []string{"spec.resourceClaims"}},
		{name: "fsGroupChangePolicy is honoured as upstream (no effect on the supported volume types), not flagged",
			mutate: podSC(func(c *corev1.PodSecurityContext) { c.FSGroupChangePolicy = ptr(corev1.FSGroupChangeOnRootMismatch) })},
		{name: "sysctls are admission's (SysctlAllowlist), not flagged", mutate: podSC(func(c *corev1.PodSecurityContext) {
			c.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		})},
		{name: "seLinuxChangePolicy", mutate: podSC(func(c *corev1.PodSecurityContext) { c.SELinuxChangePolicy = ptr(corev1.SELinuxChangePolicyRecursive) }),
			ignored: []string{"spec.securityContext.seLinuxChangePolicy"}},
		{name: "pod windowsOptions", mutate: podSC(func(c *corev1.PodSecurityContext) { c.WindowsOptions = &corev1.WindowsSecurityContextOptions{} }),
			ignored: []string{"spec.securityContext.windowsOptions"}},
		{name: "ephemeral containers are honoured", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{}, {}}
		}},

		// hostUsers: false is honoured (node/userns), where the runtime
		// supports user namespaces.
		{name: "hostUsers false is honoured, not refused", mutate: func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }},
		{name: "runtimeClassName is honoured, not flagged", mutate: func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr("gvisor") }},

		// Ignored container fields.
		{name: "lifecycle hooks are honoured, not flagged", mutate: side(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
		})},
		{name: "volumeMounts", mutate: side(func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{{Name: "v"}} })},
		{name: "volumeDevices", mutate: side(func(c *corev1.Container) { c.VolumeDevices = []corev1.VolumeDevice{{Name: "v"}} }), ignored: []string{c1 + "volumeDevices"}},
		{name: "restartPolicyRules are honoured", mutate: side(func(c *corev1.Container) { c.RestartPolicyRules = []corev1.ContainerRestartRule{{}} })},
		{name: "resizePolicy is honoured (runtimesync), not flagged", mutate: side(func(c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}
		})},
		{name: "resource claims", mutate: side(func(c *corev1.Container) { c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} }),
			ignored: []string{c1 + "resources.claims"}},
		{name: "hugepages", mutate: side(func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi"), "memory": resource.MustParse("1Gi")}
			c.Resources.Requests = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")}
		})}, // hugetlb limits (podspec)
		{name: "termination messages are honoured, not flagged", mutate: side(func(c *corev1.Container) {
			c.TerminationMessagePath = "/tmp/msg"
			c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		})},
		{name: "container windowsOptions", mutate: appSC(func(s *corev1.SecurityContext) { s.WindowsOptions = &corev1.WindowsSecurityContextOptions{} }),
			ignored: []string{c1 + "securityContext.windowsOptions"}},
		{name: "sidecars (restartable init containers) are honoured", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}},

		// The security context is honoured (node/podspec): not flagged.
		{name: "security context supported", mutate: func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)),
				RunAsNonRoot: ptr(true), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{5},
				SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict),
				SELinuxOptions:           &corev1.SELinuxOptions{Level: "s0"},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				AppArmorProfile:          &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("p")}}
			p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr(true)}
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1)), RunAsGroup: ptr(int64(1)),
				RunAsNonRoot: ptr(true), ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false), Privileged: ptr(true),
				Capabilities:    &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
				ProcMount:       ptr(corev1.UnmaskedProcMount),
				SELinuxOptions:  &corev1.SELinuxOptions{Type: "t"},
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("p.json")},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
		}},

		{name: "ignored fields in spec order", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}}}
			p.Spec.HostUsers = ptr(false)
			p.Spec.InitContainers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "v"}}
			p.Spec.RuntimeClassName = ptr("kata")
		},
			ignored: []string{"spec.volumes[0].nfs", "spec.initContainers[0].volumeDevices"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := basePod()
			tc.mutate(p)
			got := Check(p)
			want := Unsupported{Ignored: tc.ignored}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	u := Unsupported{Ignored: []string{"spec.volumes", "spec.containers[0].livenessProbe"}}
	if got, want := u.WarningMessage(), "lockstep does not support these pod fields yet and runs the pod without them: spec.volumes, spec.containers[0].livenessProbe"; got != want {
		t.Errorf("WarningMessage = %q, want %q", got, want)
	}
	if (Unsupported{}).WarningMessage() != "" {
		t.Error("messages of a pod with nothing unsupported must be empty")
	}
}

// TestCheckFlagsEverySecurityFieldNotHonoured: every field of the pod's
// and a container's security context that podspec does not list as
// honoured (fsGroupChangePolicy aside, the volume manager's) is flagged
// when set, and no honoured one is, whatever fields Kubernetes adds.
func TestCheckFlagsEverySecurityFieldNotHonoured(t *testing.T) {
	set := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		default:
			t.Fatalf("a security context field of kind %s: teach the test to set it", v.Kind())
		}
	}
	for _, tc := range []struct {
		what     string
		sc       func(*corev1.Pod) reflect.Value
		prefix   string
		honoured []string
	}{
		{"pod", func(p *corev1.Pod) reflect.Value {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
			return reflect.ValueOf(p.Spec.SecurityContext).Elem()
		}, "spec.securityContext.", append(podspec.HonouredPodSecurityFields(), "fsGroupChangePolicy")},
		{"container", func(p *corev1.Pod) reflect.Value {
			p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{}
			return reflect.ValueOf(p.Spec.Containers[1].SecurityContext).Elem()
		}, "spec.containers[1].securityContext.", podspec.HonouredContainerSecurityFields()},
	} {
		fields := reflect.TypeFor[corev1.PodSecurityContext]()
		if tc.what == "container" {
			fields = reflect.TypeFor[corev1.SecurityContext]()
		}
		for i := range fields.NumField() {
			name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
			t.Run(tc.what+" "+name, func(t *testing.T) {
				p := basePod()
				set(tc.sc(p).Field(i))
				var want []string
				if !slices.Contains(tc.honoured, name) {
					want = []string{tc.prefix + name}
				}
				if diff := cmp.Diff(Unsupported{Ignored: want}, Check(p)); diff != "" {
					t.Errorf("Check (-want +got):\n%s", diff)
				}
			})
		}
	}
}
