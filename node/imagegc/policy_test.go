package imagegc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

// Detection: a new image is first detected now, an image named by a
// container (by ID, tag or digest, in any state) was last used now, the
// others keep their times; records of images gone are dropped.
func TestDetect(t *testing.T) {
	old := Records{
		"sha256:a":    {FirstDetected: at(0), LastUsed: at(1), Size: 10},
		"sha256:b":    {FirstDetected: at(0)},
		"sha256:gone": {FirstDetected: at(0)},
	}
	imgs := []*runtimeapi.Image{
		{Id: "sha256:a", Size: 11, RepoTags: []string{"docker.io/library/a:1"}},
		{Id: "sha256:b", Size: 20, RepoDigests: []string{"docker.io/library/b@sha256:bb"}},
		{Id: "sha256:c", Size: 30, Pinned: true},
		{Id: "sha256:d", Size: 40},
	}
	ctrs := []*runtimeapi.Container{
		{Image: &runtimeapi.ImageSpec{Image: "docker.io/library/a:1"}, State: runtimeapi.ContainerState_CONTAINER_EXITED},
		{ImageRef: "docker.io/library/b@sha256:bb"},
		{ImageId: "sha256:d"},
	}
	got, inUse := Detect(old, imgs, InUse(ctrs), at(5))
	want := Records{
		"sha256:a": {FirstDetected: at(0), LastUsed: at(5), Size: 11, Tags: []string{"docker.io/library/a:1"}},
		"sha256:b": {FirstDetected: at(0), LastUsed: at(5), Size: 20},
		"sha256:c": {FirstDetected: at(5), Size: 30, Pinned: true},
		"sha256:d": {FirstDetected: at(5), LastUsed: at(5), Size: 40},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]bool{"sha256:a": true, "sha256:b": true, "sha256:d": true}, inUse); d != "" {
		t.Errorf("in use (-want +got):\n%s", d)
	}
}

// Candidates leave out images in use, pinned and protected ones, least
// recently used first, ties by first detection then ID.
func TestCandidatesOrder(t *testing.T) {
	recs := Records{
		"used":   {FirstDetected: at(0), LastUsed: at(9)},
		"pinned": {FirstDetected: at(0), Pinned: true},
		"pause":  {FirstDetected: at(0), Tags: []string{"pause"}},
		"late":   {FirstDetected: at(0), LastUsed: at(7)},
		"early":  {FirstDetected: at(0), LastUsed: at(3)},
		"never2": {FirstDetected: at(2)},
		"never1": {FirstDetected: at(1)},
		"neverA": {FirstDetected: at(1)},
	}
	prot := func(id string, r Record) bool { return len(r.Tags) > 0 && r.Tags[0] == "pause" }
	var ids []string
	for _, c := range Candidates(recs, map[string]bool{"used": true}, prot) {
		ids = append(ids, c.ID)
	}
	if d := cmp.Diff([]string{"never1", "neverA", "never2", "early", "late"}, ids); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

// ForSpace skips images too young or used now, stops once enough is
// freed, and takes one image even when nothing needs freeing (as the
// kubelet, which is called only above the high threshold).
func TestForSpace(t *testing.T) {
	cands := []Candidate{
		{ID: "young", Record: Record{FirstDetected: at(9), Size: 100}},
		{ID: "a", Record: Record{FirstDetected: at(0), Size: 10}},
		{ID: "b", Record: Record{FirstDetected: at(0), LastUsed: at(5), Size: 20}},
		{ID: "c", Record: Record{FirstDetected: at(0), LastUsed: at(6), Size: 30}},
		{ID: "now", Record: Record{FirstDetected: at(0), LastUsed: at(10), Size: 30}},
	}
	ids := func(cs []Candidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		toFree int64
		want   []string
	}{
		{0, []string{"a"}},
		{25, []string{"a", "b"}},
		{30, []string{"a", "b"}},
		{31, []string{"a", "b", "c"}},
		{1000, []string{"a", "b", "c"}},
	} {
		if d := cmp.Diff(tc.want, ids(ForSpace(cands, tc.toFree, 2*time.Minute, at(10)))); d != "" {
			t.Errorf("toFree %d (-want +got):\n%s", tc.toFree, d)
		}
	}
}

// ForAge removes images unused for longer than the maximum age, only once
// the collector has run that long, and nothing without a maximum age.
func TestForAge(t *testing.T) {
	cands := []Candidate{
		{ID: "old", Record: Record{FirstDetected: at(0), LastUsed: at(1)}},
		{ID: "recent", Record: Record{FirstDetected: at(0), LastUsed: at(50)}},
	}
	if got := ForAge(cands, 0, at(0), at(100)); got != nil {
		t.Errorf("no maximum age removed %v", got)
	}
	if got := ForAge(cands, time.Hour, at(50), at(100)); got != nil {
		t.Errorf("removed %v before the collector ran an hour", got)
	}
	got := ForAge(cands, time.Hour, at(0), at(100))
	if len(got) != 1 || got[0].ID != "old" {
		t.Errorf("removed %v, want old only", got)
	}
}

func TestUsageAndPolicy(t *testing.T) {
	pct, toFree := Usage(1000, 100, 80)
	if pct != 90 || toFree != 100 {
		t.Errorf("Usage(1000, 100, 80) = %d, %d; want 90, 100", pct, toFree)
	}
	if pct, _ := Usage(1000, 2000, 80); pct != 0 {
		t.Errorf("available above capacity: %d%%", pct)
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Error(err)
	}
	for _, p := range []Policy{{HighThresholdPercent: 101}, {HighThresholdPercent: 50, LowThresholdPercent: 60}, {HighThresholdPercent: 80, LowThresholdPercent: -1},
		{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Hour, MaxAge: time.Minute}} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if FormatSize(3<<30) != "3.0 GiB" || FormatSize(12) != "12 B" {
		t.Errorf("FormatSize: %s, %s", FormatSize(3<<30), FormatSize(12))
	}
}
