package podspec

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultSeccompProfileRoot is where Localhost seccomp profiles are looked
// up when NodeInfo.SeccompProfileRoot is empty (<root-dir>/seccomp of the
// upstream kubelet's default root directory).
const DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"

// ImageUser is the user an image runs as, from the runtime's ImageStatus:
// a numeric UID, or a user name the runtime resolves, or neither, which
// means root (UID 0), as the upstream kubelet reads it.
type ImageUser struct {
	UID      *int64
	Username string
}

// id returns the numeric user (0 when the image names none) and the name.
func (u ImageUser) id() (*int64, string) {
	if u.UID != nil {
		uid := *u.UID
		return &uid, ""
	}
	if u.Username != "" {
		return nil, u.Username
	}
	root := int64(0)
	return &root, ""
}

// defaultReadonlyPaths are the /proc paths a container sees read-only
// unless it asks for an unmasked /proc.
var defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// defaultMaskedPaths are the paths hidden from a container unless it asks
// for an unmasked /proc (NodeInfo.ThermalThrottlePaths come after).
var defaultMaskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
}

// effectiveSecurityContext merges the pod's security context under the
// container's: the container's fields win where it sets them. The pod
// contributes only the fields both levels share (users, groups, non-root,
// SELinux); the rest are the container's alone. The result is never nil.
func effectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	out := &corev1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.SELinuxOptions = clonePtr(psc.SELinuxOptions)
		out.RunAsUser = clonePtr(psc.RunAsUser)
		out.RunAsGroup = clonePtr(psc.RunAsGroup)
		out.RunAsNonRoot = clonePtr(psc.RunAsNonRoot)
	}
	csc := c.SecurityContext
	if csc == nil {
		return out
	}
	if csc.SELinuxOptions != nil {
		out.SELinuxOptions = clonePtr(csc.SELinuxOptions)
	}
	if csc.RunAsUser != nil {
		out.RunAsUser = clonePtr(csc.RunAsUser)
	}
	if csc.RunAsGroup != nil {
		out.RunAsGroup = clonePtr(csc.RunAsGroup)
	}
	if csc.RunAsNonRoot != nil {
		out.RunAsNonRoot = clonePtr(csc.RunAsNonRoot)
	}
	out.Capabilities = clonePtr(csc.Capabilities)
	out.Privileged = clonePtr(csc.Privileged)
	out.ReadOnlyRootFilesystem = clonePtr(csc.ReadOnlyRootFilesystem)
	out.AllowPrivilegeEscalation = clonePtr(csc.AllowPrivilegeEscalation)
	out.ProcMount = clonePtr(csc.ProcMount)
	return out
}

// clonePtr returns a pointer to a copy of *p (nil for nil).
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// VerifyRunAsNonRoot checks a container that must not run as root against
// the user it would run as: its own or the pod's runAsUser, else the
// image's user. A root UID fails, and so does an image user given only by
// name (it cannot be checked) or a UID outside 1..2^31-1.
func VerifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, image ImageUser) error {
	sc := effectiveSecurityContext(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("runAsNonRoot: runAsUser 0 is root")
		}
		return nil
	}
	uid, name := image.id()
	switch {
	case uid == nil:
		return fmt.Errorf("runAsNonRoot: image user %q is not numeric, so it cannot be verified to be non-root", name)
	case *uid == 0:
		return fmt.Errorf("runAsNonRoot: the image runs as root")
	case *uid < 1 || *uid > math.MaxInt32:
		return fmt.Errorf("runAsNonRoot: the image's user id %d is not in 1..%d", *uid, math.MaxInt32)
	}
	return nil
}

// containerSecurityContext returns the Linux security context of a
// container: the merged pod and container contexts (capabilities,
// SELinux, users, privileged, read-only root), seccomp and AppArmor
// profiles, the image's user when no runAsUser is set, the pod's namespace
// modes, supplemental groups (fsGroup, then supplementalGroups, and their
// policy), no-new-privileges when privilege escalation is refused, and the
// masked and read-only /proc paths.
func containerSecurityContext(pod *corev1.Pod, c *corev1.Container, image ImageUser, node NodeInfo) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := effectiveSecurityContext(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     runtimeCapabilities(sc.Capabilities),
		SelinuxOptions:   runtimeSELinux(sc.SELinuxOptions),
		Privileged:       sc.Privileged != nil && *sc.Privileged,
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		NamespaceOptions: namespaceOptions(pod),
		NoNewPrivs:       sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		MaskedPaths:      maskedPaths(sc.ProcMount, node),
		ReadonlyPaths:    readonlyPaths(sc.ProcMount),
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	} else {
		uid, name := image.id()
		if uid != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *uid}
		}
		out.RunAsUsername = name
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	var err error
	if out.Seccomp, err = seccompProfile(pod, c, node); err != nil {
		return nil, err
	}
	if out.Apparmor, out.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
		out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
		if out.SupplementalGroupsPolicy, err = groupsPolicy(psc.SupplementalGroupsPolicy); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sandboxSecurityContext returns the sandbox's Linux security context:
// privileged when any container of the pod is, the runtime's default
// seccomp profile, the pod's namespace modes, and from the pod's security
// context its users, SELinux options and supplemental groups (fsGroup
// first) with their policy.
func sandboxSecurityContext(pod *corev1.Pod) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	out := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Privileged:       anyPrivileged(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return out, nil
	}
	if psc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	if psc.FSGroup != nil {
		out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
	}
	out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
	var err error
	if out.SupplementalGroupsPolicy, err = groupsPolicy(psc.SupplementalGroupsPolicy); err != nil {
		return nil, err
	}
	out.SelinuxOptions = runtimeSELinux(psc.SELinuxOptions)
	return out, nil
}

// anyPrivileged reports whether any container of the pod is privileged.
func anyPrivileged(pod *corev1.Pod) bool {
	privileged := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if privileged(list[i].SecurityContext) {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// groupsPolicy maps a supplementalGroupsPolicy to the CRI's (Merge when
// unset).
func groupsPolicy(p *corev1.SupplementalGroupsPolicy) (runtimeapi.SupplementalGroupsPolicy, error) {
	if p == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*p)]
	if !ok {
		return 0, fmt.Errorf("supplementalGroupsPolicy %q is not supported", *p)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// runtimeCapabilities copies capabilities to add and drop, in order.
func runtimeCapabilities(c *corev1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	out := &runtimeapi.Capability{
		AddCapabilities:  make([]string, len(c.Add)),
		DropCapabilities: make([]string, len(c.Drop)),
	}
	for i, v := range c.Add {
		out.AddCapabilities[i] = string(v)
	}
	for i, v := range c.Drop {
		out.DropCapabilities[i] = string(v)
	}
	return out
}

// runtimeSELinux copies SELinux options.
func runtimeSELinux(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// unmasked reports whether a container asks for an unmasked /proc.
func unmasked(pm *corev1.ProcMountType) bool {
	return pm != nil && *pm == corev1.UnmaskedProcMount
}

// maskedPaths are the paths hidden from the container: none for an
// unmasked /proc, else the defaults and the node's thermal-throttle
// directories.
func maskedPaths(pm *corev1.ProcMountType, node NodeInfo) []string {
	if unmasked(pm) {
		return []string{}
	}
	return append(slices.Clone(defaultMaskedPaths), node.ThermalThrottlePaths...)
}

// readonlyPaths are the /proc paths the container sees read-only: none
// for an unmasked /proc, else the defaults.
func readonlyPaths(pm *corev1.ProcMountType) []string {
	if unmasked(pm) {
		return []string{}
	}
	return slices.Clone(defaultReadonlyPaths)
}

// seccompProfile returns the container's seccomp profile: the container's
// seccompProfile, else the pod's, else RuntimeDefault when the node
// defaults to it (NodeInfo.SeccompDefault) and Unconfined otherwise. A
// Localhost profile is a file below the node's seccomp profile root.
func seccompProfile(pod *corev1.Pod, c *corev1.Container, node NodeInfo) (*runtimeapi.SecurityProfile, error) {
	var p *corev1.SeccompProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil:
		p = c.SecurityContext.SeccompProfile
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SeccompProfile != nil:
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	switch {
	case p == nil && node.SeccompDefault, p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("seccompProfile: type Localhost needs a localhostProfile")
		}
		root := node.SeccompProfileRoot
		if root == "" {
			root = DefaultSeccompProfileRoot
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(root, *p.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile returns the container's AppArmor profile (nil when none
// is asked for) and its deprecated string form: the container's
// appArmorProfile, else the pod's container.apparmor.security.beta.kubernetes.io
// annotation for it, else the pod's appArmorProfile.
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := appArmorFor(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			corev1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			corev1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", fmt.Errorf("appArmorProfile: type Localhost needs a localhostProfile")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			corev1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("appArmorProfile: type %q is not supported", p.Type)
}

// appArmorFor finds the AppArmor profile that applies to a container.
func appArmorFor(pod *corev1.Pod, c *corev1.Container) *corev1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if p := appArmorFromAnnotation(pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]); p != nil {
		return p
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

// NeedsAppArmor reports whether pod asks for AppArmor confinement, as
// the kubelet's AppArmor admission decides it: a pod- or container-level
// (init, regular or ephemeral) appArmorProfile of a type other than
// Unconfined, or a deprecated container.apparmor.security.beta.kubernetes.io
// annotation whose value is not "unconfined". Unconfined needs nothing.
func NeedsAppArmor(pod *corev1.Pod) bool {
	confines := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined
	}
	if sc := pod.Spec.SecurityContext; sc != nil && confines(sc.AppArmorProfile) {
		return true
	}
	containers := slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers)
	for i := range pod.Spec.EphemeralContainers {
		containers = append(containers, corev1.Container{SecurityContext: pod.Spec.EphemeralContainers[i].SecurityContext})
	}
	for _, c := range containers {
		if c.SecurityContext != nil && confines(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

// appArmorFromAnnotation reads the deprecated annotation form of a
// profile ("runtime/default", "unconfined", "localhost/<name>"); any other
// value (or none) is no profile.
func appArmorFromAnnotation(v string) *corev1.AppArmorProfile {
	switch {
	case v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}

// FSUser returns the user that owns a pod's projected tokens, as
// upstream's FsUserFrom: the effective runAsUser shared by every init and
// regular container; false when one sets none or two differ.
func FSUser(pod *corev1.Pod) (int64, bool) {
	var uid *int64
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			u := effectiveSecurityContext(pod, &list[i]).RunAsUser
			if u == nil || uid != nil && *uid != *u {
				return 0, false
			}
			uid = u
		}
	}
	if uid == nil {
		return 0, false
	}
	return *uid, true
}
