// Package cgroups is the agent's container manager for pod and QoS
// cgroups: the kubepods hierarchy (kubepods, kubepods/burstable,
// kubepods/besteffort, one pod<uid> cgroup per pod with Guaranteed pods
// directly under kubepods) under the cgroupfs and systemd drivers, the
// limits of a pod's cgroup and of the QoS classes, and a Manager that keeps
// the tree in step with the pods through the deps.Cgroups port. Names,
// limits and QoS values are pure functions of the pods and the Config.
package cgroups

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver is how cgroups are named and created: by directory (cgroupfs) or
// as systemd slices.
type Driver string

// The cgroup drivers.
const (
	DriverCgroupfs Driver = "cgroupfs"
	DriverSystemd  Driver = "systemd"
)

// Names of the hierarchy's parts.
const (
	// KubepodsName is the cgroup every pod lives under.
	KubepodsName = "kubepods"
	// podPrefix starts the name of a pod's cgroup: pod<uid>.
	podPrefix     = "pod"
	systemdSuffix = ".slice"
)

// Name is a cgroup as a list of components from the root, whatever the
// driver: {"kubepods", "burstable", "pod<uid>"}.
type Name []string

// Child returns the name of the cgroup c under n.
func (n Name) Child(c string) Name {
	return append(append(Name{}, n...), c)
}

// Path returns n in cgroupfs form for a driver: "/kubepods/burstable/pod<uid>"
// under cgroupfs, "/kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod<uid with '_' for '-'>.slice" under systemd.
func (n Name) Path(d Driver) string {
	if d != DriverSystemd {
		return "/" + path.Join(n...)
	}
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	parts := make([]string, 0, len(n))
	for _, c := range n {
		parts = append(parts, strings.ReplaceAll(c, "-", "_"))
		b.WriteString("/" + strings.Join(parts, "-") + systemdSuffix)
	}
	return b.String()
}

// ParseRoot turns a --cgroup-root ("/", "/custom") into a Name.
func ParseRoot(root string) Name {
	var n Name
	for _, c := range strings.Split(strings.Trim(root, "/"), "/") {
		if c != "" {
			n = append(n, c)
		}
	}
	return n
}

// ParseDriver checks a --cgroup-driver value.
func ParseDriver(s string) (Driver, error) {
	switch d := Driver(s); d {
	case DriverCgroupfs, DriverSystemd:
		return d, nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q (cgroupfs or systemd)", s)
}

// Kubepods is the name of the cgroup all pods live under: the root's
// kubepods with cgroups per QoS, else the root itself.
func (c Config) Kubepods() Name {
	root := ParseRoot(c.Root)
	if !c.CgroupsPerQOS {
		return root
	}
	return root.Child(KubepodsName)
}

// QOSParent is the parent of the cgroups of pods of class qos:
// kubepods for Guaranteed, kubepods/burstable, kubepods/besteffort.
func (c Config) QOSParent(qos corev1.PodQOSClass) Name {
	k := c.Kubepods()
	if qos == corev1.PodQOSGuaranteed {
		return k
	}
	return k.Child(strings.ToLower(string(qos)))
}

// PodName is the name of the cgroup of the pod with uid and class qos.
func (c Config) PodName(uid types.UID, qos corev1.PodQOSClass) Name {
	return c.QOSParent(qos).Child(podPrefix + string(uid))
}

// PodUID returns the UID of the pod whose cgroup is child (a name List
// returned under a QoS parent), and false when child is no pod's cgroup.
func (c Config) PodUID(child string) (types.UID, bool) {
	if c.Driver == DriverSystemd {
		base, ok := strings.CutSuffix(child, systemdSuffix)
		if !ok {
			return "", false
		}
		child = strings.ReplaceAll(base[strings.LastIndex(base, "-")+1:], "_", "-")
	}
	uid, ok := strings.CutPrefix(child, podPrefix)
	if !ok || uid == "" {
		return "", false
	}
	return types.UID(uid), true
}
