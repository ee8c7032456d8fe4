package fakecri

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FAKECRI_WRITE's timeline lands in the host directory of the mount it
// names while the container runs, stops growing when it exits, and counts
// in nodefs.
func TestWrittenUnder(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	cfg := ctrConfig("c", "FAKECRI_WRITE=/data/sub=1Mi,10s:4Mi;/other=2Mi", "FAKECRI_EXIT_AFTER=15s")
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/pods/u/volumes/kubernetes.io~empty-dir/data"},
		{ContainerPath: "/other", HostPath: "/pods/u/volumes/kubernetes.io~empty-dir/other"},
	}
	base := f.r.NodeUsage().Nodefs.Used
	f.run(sb, cfg)
	at := func(d time.Duration) []uint64 {
		f.clock.Advance(d - f.clock.Elapsed())
		return []uint64{
			f.r.WrittenUnder("/pods/u/volumes/kubernetes.io~empty-dir/data"),
			f.r.WrittenUnder("/pods/u/volumes/kubernetes.io~empty-dir/other"),
			f.r.WrittenUnder("/pods/u/volumes"),
			f.r.WrittenUnder("/pods/v"),
			f.r.NodeUsage().Nodefs.Used - base,
		}
	}
	got := [][]uint64{at(5 * time.Second), at(12 * time.Second), at(60 * time.Second)}
	want := [][]uint64{
		{1 << 20, 2 << 20, 3 << 20, 0, 3 << 20},
		{4 << 20, 2 << 20, 6 << 20, 0, 6 << 20},
		{4 << 20, 2 << 20, 6 << 20, 0, 6 << 20}, // exited at 15 s: what it wrote stays
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("written [data, other, volumes, elsewhere, nodefs] at 5 s, 12 s, 60 s (-want +got):\n%s", diff)
	}
}

func TestParseWritesRejects(t *testing.T) {
	for _, v := range []string{"data=1Mi", "/data", "/data=lots", "/data=1Mi,5s:2Mi,5s:3Mi"} {
		if _, err := parseWrites(v); err == nil {
			t.Errorf("parseWrites(%q) accepted", v)
		} else if !strings.Contains(err.Error(), "write") {
			t.Errorf("parseWrites(%q): error %q does not name the write", v, err)
		}
	}
}
