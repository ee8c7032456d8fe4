package logrotate_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// Plan removes leftovers and the oldest files beyond MaxFiles-2, and
// compresses the plain ones it keeps, as the kubelet's rotation.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name             string
		rotated          []string
		maxFiles         int
		remove, compress []string
	}{
		{"first rotation", nil, 5, nil, nil},
		{"newest plain gets compressed", []string{"l.1.gz", "l.2"}, 5, nil, []string{"l.2"}},
		{"excess removed oldest first", []string{"l.1.gz", "l.2.gz", "l.3.gz", "l.4"}, 5, []string{"l.1.gz"}, []string{"l.4"}},
		{"two files: only the current and the newest", []string{"l.1.gz", "l.2"}, 2, []string{"l.1.gz", "l.2"}, nil},
		{"leftovers of an interrupted compression", []string{"l.1", "l.1.gz", "l.2.tmp", "l.3"}, 5, []string{"l.1", "l.2.tmp"}, []string{"l.3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rm, comp := logrotate.Plan(tc.rotated, tc.maxFiles)
			if d := cmp.Diff(tc.remove, rm); d != "" {
				t.Errorf("remove (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.compress, comp); d != "" {
				t.Errorf("compress (-want +got):\n%s", d)
			}
		})
	}
}

// A chatty container's log is rotated each check once it passed MaxSize:
// at most MaxFiles files, the older rotated ones gzipped, the newest
// plain, and the rotated files and the current one together hold the
// lines in order, none twice.
func TestRotationOnTheClock(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	files := memfs.New()
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: files,
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	d := k.Deps()
	m := logrotate.New(d.Core, rt, files, logrotate.Config{MaxSize: 4 << 10, MaxFiles: 3})
	ctx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := files.MkdirAll("/var/log/pods/ns_p_u"); err != nil {
		t.Fatal(err)
	}
	k.Go("setup", func() {
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}, LogDirectory: "/var/log/pods/ns_p_u"}
		sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			t.Error(err)
			return
		}
		id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image: &runtimeapi.ImageSpec{Image: "busybox:latest"}, LogPath: "c/0.log",
			Envs: []*runtimeapi.KeyValue{{Key: "FAKECRI_LOG", Value: []byte("line {n}")}, {Key: "FAKECRI_LOG_EVERY", Value: []byte("100ms")}}}, sbCfg)
		if err != nil {
			t.Error(err)
			return
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Error(err)
		}
	})
	m.Start(ctx)
	const log = "/var/log/pods/ns_p_u/c/0.log"
	for range 12 {
		if err := k.RunFor(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		rotated, err := logrotate.Rotated(files, log)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rotated) + 1; n > 3 {
			t.Fatalf("%d log files: %v", n, rotated)
		}
		for i, r := range rotated {
			if gz := strings.HasSuffix(r, ".gz"); gz != (i < len(rotated)-1) {
				t.Errorf("rotated files %v: only the newest should be plain", rotated)
			}
		}
	}
	rotated, _ := logrotate.Rotated(files, log)
	if len(rotated) != 2 {
		t.Fatalf("rotated files %v, want 2 after two minutes", rotated)
	}
	var all []string
	for _, f := range append(rotated, log) {
		b, err := files.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	prev := 0
	for _, l := range all {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue // an empty current file
		}
		n, _ := strconv.Atoi(f[len(f)-1])
		if prev != 0 && n != prev+1 {
			t.Fatalf("line %d after %d (lines lost or repeated inside the kept files)", n, prev)
		}
		prev = n
	}
	if prev < 1000 {
		t.Errorf("last line %d, want about 1200", prev)
	}
}
