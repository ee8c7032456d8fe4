package cgstatstest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/real/cgstats/cgstatstest"
)

// TestLayoutsHoldWhatWantSays: each layout writes the container's memory
// limit where its cgroup version keeps it (the page-rounded LimitBytes)
// below the paths Host names, and Want reports that limit for the
// container at the path the layout chose.
func TestLayoutsHoldWhatWantSays(t *testing.T) {
	for _, l := range cgstatstest.Layouts {
		t.Run(l.String(), func(t *testing.T) {
			h := cgstatstest.New(t, l)
			file := filepath.Join(h.Root, h.ContainerCgroup, "memory.max")
			if h.V1 {
				file = filepath.Join(h.Root, "memory", h.ContainerCgroup, "memory.limit_in_bytes")
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("the layout has no limit file: %v", err)
			}
			if diff := cmp.Diff("79998976\n", string(got)); diff != "" {
				t.Errorf("limit file (-want +got):\n%s", diff)
			}
			ctr, ok := h.Want().Containers[cgstatstest.ContainerID]
			if !ok || ctr.Path != h.ContainerCgroup || ctr.Spec.MemoryLimit != cgstatstest.LimitBytes {
				t.Errorf("Want's container: %+v (found %v), want path %s and limit %d", ctr, ok, h.ContainerCgroup, cgstatstest.LimitBytes)
			}
		})
	}
}

// TestWriteOverwrites: Write makes the directories and replaces a file's
// content.
func TestWriteOverwrites(t *testing.T) {
	dir := t.TempDir()
	cgstatstest.Write(t, dir, map[string]string{"a/b/c": "one"})
	cgstatstest.Write(t, dir, map[string]string{"a/b/c": "two"})
	got, err := os.ReadFile(filepath.Join(dir, "a/b/c"))
	if err != nil || string(got) != "two" {
		t.Errorf("a/b/c = %q, %v; want two", got, err)
	}
}
