package cgroups

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Expected paths come from upstream v1.37.2 pkg/kubelet/cm
// (cgroup_manager_linux_test.go: TestCgroupNameToSystemd and friends;
// pod_container_manager_linux.go GetPodContainerName; the QoS container
// manager's kubepods/burstable/besteffort).
func TestNamePath(t *testing.T) {
	for _, tc := range []struct {
		name     Name
		cgroupfs string
		systemd  string
	}{
		{nil, "/", "/"},
		{Name{"kubepods"}, "/kubepods", "/kubepods.slice"},
		{Name{"Burstable"}, "/Burstable", "/Burstable.slice"},
		{Name{"Burstable", "pod-123"}, "/Burstable/pod-123", "/Burstable.slice/Burstable-pod_123.slice"},
		{Name{"BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"},
			"/BestEffort/pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d",
			"/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice"},
		{Name{"kubepods", "burstable", "pod6c1a4e95-6bb6"},
			"/kubepods/burstable/pod6c1a4e95-6bb6",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6c1a4e95_6bb6.slice"},
	} {
		if got := tc.name.Path(DriverCgroupfs); got != tc.cgroupfs {
			t.Errorf("%v cgroupfs = %q, want %q", tc.name, got, tc.cgroupfs)
		}
		if got := tc.name.Path(DriverSystemd); got != tc.systemd {
			t.Errorf("%v systemd = %q, want %q", tc.name, got, tc.systemd)
		}
	}
}

func TestPodNames(t *testing.T) {
	uid := types.UID("6c1a4e95-6bb6-11e6")
	for _, tc := range []struct {
		cfg  Config
		qos  corev1.PodQOSClass
		want string
	}{
		{Config{CgroupsPerQOS: true, Root: "/"}, corev1.PodQOSGuaranteed, "/kubepods/pod6c1a4e95-6bb6-11e6"},
		{Config{CgroupsPerQOS: true, Root: "/"}, corev1.PodQOSBurstable, "/kubepods/burstable/pod6c1a4e95-6bb6-11e6"},
		{Config{CgroupsPerQOS: true, Root: "/"}, corev1.PodQOSBestEffort, "/kubepods/besteffort/pod6c1a4e95-6bb6-11e6"},
		{Config{CgroupsPerQOS: true, Root: "/custom/"}, corev1.PodQOSBurstable, "/custom/kubepods/burstable/pod6c1a4e95-6bb6-11e6"},
		{Config{CgroupsPerQOS: true, Root: "/", Driver: DriverSystemd}, corev1.PodQOSGuaranteed,
			"/kubepods.slice/kubepods-pod6c1a4e95_6bb6_11e6.slice"},
		{Config{CgroupsPerQOS: true, Root: "/", Driver: DriverSystemd}, corev1.PodQOSBestEffort,
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6c1a4e95_6bb6_11e6.slice"},
	} {
		path := tc.cfg.PodName(uid, tc.qos).Path(tc.cfg.Driver)
		if path != tc.want {
			t.Errorf("%+v %s: path %q, want %q", tc.cfg, tc.qos, path, tc.want)
		}
		base := path[len(tc.cfg.QOSParent(tc.qos).Path(tc.cfg.Driver)):]
		if tc.cfg.QOSParent(tc.qos).Path(tc.cfg.Driver) == "/" {
			base = path[1:]
		} else {
			base = base[1:]
		}
		if got, ok := tc.cfg.PodUID(base); !ok || got != uid {
			t.Errorf("%+v: PodUID(%q) = %q, %v; want %q", tc.cfg, base, got, ok, uid)
		}
	}
	cfg := Config{CgroupsPerQOS: true, Root: "/", Driver: DriverSystemd}
	for _, notPod := range []string{"kubepods-burstable.slice", "kubepods-besteffort.slice", "cgroup.procs", "pod"} {
		if uid, ok := cfg.PodUID(notPod); ok {
			t.Errorf("PodUID(%q) = %q, want no pod", notPod, uid)
		}
	}
	if uid, ok := (Config{}).PodUID("burstable"); ok {
		t.Errorf("cgroupfs PodUID(burstable) = %q, want no pod", uid)
	}
}
