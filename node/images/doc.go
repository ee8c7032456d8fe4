// Package images makes sure a container's image is on the node before the
// container is created, as the kubelet's image manager does: the pull
// policy decides whether to pull (Decide); a pull failure is ErrImagePull
// and the next attempts wait out ImagePullBackOff, a curve per pod and
// image (node/backoff); an absent image under policy Never is
// ErrImageNeverPull; the pod's imagePullSecrets (kubernetes.io/dockerconfigjson
// and kubernetes.io/dockercfg) become a Keyring whose matching credentials
// are tried in turn as CRI AuthConfigs; pulls go one at a time by default
// or up to a limit in parallel (Gate). Every step records the upstream
// kubelet's events (Pulling, Pulled, Failed, BackOff, ErrImageNeverPull).
package images
