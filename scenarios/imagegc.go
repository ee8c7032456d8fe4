package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// The image-gc scenario's collector: thresholds below the eviction
// manager's imagefs ones, so that only the collector acts, a short
// minimum age and period so that a run sees several collections.
const (
	gcHigh, gcLow = 70, 60
	gcMinAge      = 30 * time.Second
	gcPeriod      = time.Minute
)

// gcImages are the registry images image pods use, GiB sized so that a
// few of them move the image filesystem (100 GiB) across the thresholds.
func gcImages() []fakecri.Image {
	var out []fakecri.Image
	for i := range 6 {
		out = append(out, fakecri.Image{Ref: gcImage(i), Size: uint64(i+1) << 30, Inodes: 100})
	}
	return out
}

func gcImage(i int) string { return fmt.Sprintf("example.com/gc/img%d:v1", i) }

func imageGCScenario() Scenario {
	return Scenario{Name: "image-gc",
		Doc:      "pods using images come and go while the image filesystem fills, with agent crashes: the collector removes unused images least recently used first (image-gc-safe, image-gc-lru)",
		Mix:      map[string]int{"create-image": 6, "delete": 4, "image-disk": 2, "crash": 1, "crash-in-sync": 1, "wait": 3},
		MaxSteps: 20,
		Configure: func(c *harness.Config) {
			c.Agent.ImageGC = imagegc.Config{Policy: imagegc.Policy{HighThresholdPercent: gcHigh, LowThresholdPercent: gcLow, MinAge: gcMinAge}, Period: gcPeriod}
			c.Runtime.Registry = append(c.Runtime.Registry, gcImages()...)
		},
	}
}

// opCreateImage creates a pod running image a of gcImages (pulled if
// not present); with b=1 it exits after 10 s and is not restarted.
func opCreateImage(r *run, a [3]int) error {
	name := fmt.Sprintf("g%d", r.step)
	opts := []PodOption{Image("app", gcImage(pick(a[0], len(gcImages()))), corev1.PullIfNotPresent), Grace(5)}
	if a[1] == 1 {
		opts = append(opts, Exits("app", 10*time.Second, 0), Restart(corev1.RestartPolicyNever))
	}
	if _, err := Create(r.h, NewPod(name, r.h.NodeName, opts...)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// Image filesystem levels of image-disk: its usage outside images and
// containers, as a share of its capacity.
var imageDiskLevels = []float64{0.2, 0.55, 0.65, 0.8}

// opImageDisk sets the image filesystem's usage outside images and
// containers to level a.
func opImageDisk(r *run, a [3]int) error {
	lvl := imageDiskLevels[pick(a[0], len(imageDiskLevels))]
	m := r.h.Runtime.Node()
	r.h.Runtime.SetNodeDiskUsage(m.NodefsBase, uint64(float64(m.ImagefsCapacity)*lvl))
	r.fault("image-disk", "base", lvl)
	return nil
}
