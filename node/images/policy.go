package images

import corev1 "k8s.io/api/core/v1"

// Step is what the pull policy asks for, given whether the image is on the
// node.
type Step int

// The steps of Decide.
const (
	// UsePresent: the image on the node is used as it is.
	UsePresent Step = iota
	// Pull: the image is pulled from its registry.
	Pull
	// NeverPull: the image is absent and may not be pulled
	// (ErrImageNeverPull).
	NeverPull
)

// String names the step.
func (s Step) String() string {
	switch s {
	case UsePresent:
		return "UsePresent"
	case Pull:
		return "Pull"
	case NeverPull:
		return "NeverPull"
	}
	return "Step(?)"
}

// Decide applies a pull policy: Always pulls whatever is present;
// IfNotPresent pulls only an absent image; Never never pulls and fails on
// an absent image. An unknown policy is treated as IfNotPresent (the API
// rejects it before it reaches a node).
func Decide(policy corev1.PullPolicy, present bool) Step {
	switch {
	case policy == corev1.PullAlways:
		return Pull
	case present:
		return UsePresent
	case policy == corev1.PullNever:
		return NeverPull
	}
	return Pull
}
