package podutil

// The reasons the agent reports for a container that is waiting. They are
// the upstream kubelet's strings: tools and users match on them.
const (
	// ReasonContainerCreating: the container has not been started yet.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPodInitializing: a regular container waits for the pod's init
	// containers.
	ReasonPodInitializing = "PodInitializing"
	// ReasonCrashLoopBackOff: the container failed and waits out its
	// restart back-off.
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
	// ReasonErrImagePull: pulling the container's image failed.
	ReasonErrImagePull = "ErrImagePull"
	// ReasonImagePullBackOff: the image pull failed and waits out its
	// back-off.
	ReasonImagePullBackOff = "ImagePullBackOff"
	// ReasonErrImageNeverPull: the image is absent and the pull policy is
	// Never.
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	// ReasonCreateContainerConfigError: the container's config could not be
	// built (a missing ConfigMap key, an unresolvable reference).
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	// ReasonCreateContainerError: the runtime refused to create the
	// container.
	ReasonCreateContainerError = "CreateContainerError"
	// ReasonRunContainerError: the runtime refused to start the container.
	ReasonRunContainerError = "RunContainerError"
	// ReasonPostStartHookError: the container's postStart hook failed; the
	// container was killed and restarts under its back-off.
	ReasonPostStartHookError = "PostStartHookError"
)

// The reasons the agent reports for a terminated container when the
// runtime gives none (or for a container nobody saw finish).
const (
	// ReasonCompleted is a clean exit (code 0) with no reason from the runtime.
	ReasonCompleted = "Completed"
	// ReasonError is a non-zero exit with no reason from the runtime.
	ReasonError = "Error"
	// ReasonOOMKilled is the runtime's reason for a kernel OOM kill.
	ReasonOOMKilled = "OOMKilled"
	// ReasonContainerStatusUnknown marks a container whose final state
	// nobody knows.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
)

// The reasons of a container whose image reference or inspection failed.
const (
	// ReasonInvalidImageName: the image reference does not parse.
	ReasonInvalidImageName = "InvalidImageName"
	// ReasonImageInspectError: the runtime could not say whether the
	// image is present.
	ReasonImageInspectError = "ImageInspectError"
)
