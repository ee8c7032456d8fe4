package podspec

// HonouredPodSecurityFields are the fields of a pod's securityContext, by
// their JSON names, that podspec turns into the sandbox's and the
// containers' CRI settings (security.go, sandbox.go). node/admission warns
// about every other field a pod sets there; a field podspec starts to
// honour goes into this list, whose test proves each one changes a config.
func HonouredPodSecurityFields() []string {
	return []string{
		"seLinuxOptions", "runAsUser", "runAsGroup", "runAsNonRoot",
		"supplementalGroups", "supplementalGroupsPolicy", "fsGroup", "sysctls",
		"seccompProfile", "appArmorProfile",
	}
}

// HonouredContainerSecurityFields are the fields of a container's
// securityContext, by their JSON names, that podspec turns into the
// container's (and for privileged, the sandbox's) CRI settings; see
// HonouredPodSecurityFields.
func HonouredContainerSecurityFields() []string {
	return []string{
		"capabilities", "privileged", "seLinuxOptions", "runAsUser", "runAsGroup",
		"runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation",
		"procMount", "seccompProfile", "appArmorProfile",
	}
}
