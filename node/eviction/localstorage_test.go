package eviction

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/stats"
)

// storagePod is a pod with one emptyDir "cache" (sizeLimit cacheLimit,
// "" none), container "app" (ephemeral-storage limit appLimit, "" none)
// and container "side" (sideLimit).
func storagePod(cacheLimit, appLimit, sideLimit string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
	ed := &corev1.EmptyDirVolumeSource{}
	if cacheLimit != "" {
		ed.SizeLimit = q(cacheLimit)
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: ed}}}
	for _, c := range []struct{ name, limit string }{{"app", appLimit}, {"side", sideLimit}} {
		ctr := corev1.Container{Name: c.name}
		if c.limit != "" {
			ctr.Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(c.limit)}
		}
		p.Spec.Containers = append(p.Spec.Containers, ctr)
	}
	return p
}

func TestCheckLocalStorage(t *testing.T) {
	usage := func(cache, appRootfs, appLogs, sideRootfs int64) PodStorage {
		return PodStorage{Volumes: map[string]int64{"cache": cache}, Containers: []ContainerStorage{
			{Name: "app", Running: true, Rootfs: appRootfs, Logs: appLogs}, {Name: "side", Running: true, Rootfs: sideRootfs}}}
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		use       PodStorage
		dedicated bool
		want      *LocalStorageViolation
	}{
		{name: "no limits", pod: storagePod("", "", ""), use: usage(100*mi, 100*mi, 100*mi, 0)},
		{name: "emptyDir at its limit", pod: storagePod("1Mi", "", ""), use: usage(mi, 0, 0, 0)},
		{name: "emptyDir over its limit", pod: storagePod("1Mi", "", ""), use: usage(mi+1, 0, 0, 0),
			want: &LocalStorageViolation{SignalEmptyDirFsLimit, `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `}},
		{name: "emptyDir first", pod: storagePod("1Mi", "1Mi", ""), use: usage(4*mi, 4*mi, 0, 0),
			want: &LocalStorageViolation{SignalEmptyDirFsLimit, `Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `}},
		{name: "pod total counts emptyDir, rootfs and logs", pod: storagePod("", "3Mi", "3Mi"), use: usage(2*mi, 2*mi, mi, 2*mi),
			want: &LocalStorageViolation{SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 6Mi. "}},
		{name: "pod total at its limit, containers under theirs", pod: storagePod("", "3Mi", "3Mi"), use: usage(2*mi, 2*mi, 0, 2*mi)},
		{name: "container over its limit, pod under", pod: storagePod("", "1Mi", "100Mi"), use: usage(0, mi, 1, 0),
			want: &LocalStorageViolation{SignalEphemeralContainerFsLimit, `Container app exceeded its local ephemeral storage limit "1Mi". `}},
		{name: "dedicated imagefs: rootfs not held against the container", pod: storagePod("", "1Mi", "100Mi"), use: usage(0, 2*mi, 0, 0), dedicated: true},
		{name: "dedicated imagefs: logs still are", pod: storagePod("", "1Mi", "100Mi"), use: usage(0, 2*mi, 2*mi, 0), dedicated: true,
			want: &LocalStorageViolation{SignalEphemeralContainerFsLimit, `Container app exceeded its local ephemeral storage limit "1Mi". `}},
		{name: "unmeasured emptyDir", pod: storagePod("1Mi", "", ""), use: PodStorage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, over := CheckLocalStorage(tc.pod, tc.use, tc.dedicated)
			var gotp *LocalStorageViolation
			if over {
				gotp = &got
			}
			if diff := cmp.Diff(tc.want, gotp); diff != "" {
				t.Errorf("CheckLocalStorage (-want +got):\n%s", diff)
			}
		})
	}
}

// A container not running is not held against its limit (its logs still
// count in the pod's total).
func TestCheckLocalStorageSkipsStoppedContainers(t *testing.T) {
	pod := storagePod("", "1Mi", "100Mi")
	use := PodStorage{Containers: []ContainerStorage{{Name: "app", Logs: 2 * mi}}}
	if v, over := CheckLocalStorage(pod, use, false); over {
		t.Errorf("stopped container evicted: %+v", v)
	}
}

func TestObserveLocalStorage(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	s := stats.Sample{
		VolumeUsage: map[types.UID]map[string]stats.FsUsage{"a": {"cache": {UsedBytes: 5}}, "b": {"tmp": {UsedBytes: 7}}},
		LogsUsage:   map[types.UID]map[string]stats.FsUsage{"a": {"app": {UsedBytes: 3}, "done": {UsedBytes: 2}, "after": {UsedBytes: 1}}},
	}
	sum := &statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{{
		PodRef:     statsv1alpha1.PodReference{UID: "a"},
		Containers: []statsv1alpha1.ContainerStats{{Name: "app", Rootfs: &statsv1alpha1.FsStats{UsedBytes: u(11)}}},
	}}}
	want := LocalStorage{
		"a": {Volumes: map[string]int64{"cache": 5}, Containers: []ContainerStorage{
			{Name: "app", Running: true, Rootfs: 11, Logs: 3}, {Name: "after", Logs: 1}, {Name: "done", Logs: 2}}},
		"b": {Volumes: map[string]int64{"tmp": 7}},
	}
	if diff := cmp.Diff(want, ObserveLocalStorage(s, sum)); diff != "" {
		t.Errorf("ObserveLocalStorage (-want +got):\n%s", diff)
	}
}
