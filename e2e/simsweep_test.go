//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// simImage is the image of the sweep: a lockstep binary and nothing else.
const simImage = "docker.io/library/lockstep-sim:e2e"

// simRegressTag is the deliberately broken build the sweep runs, so that
// its shards have failures to report (upstream #94829: one hung status
// call stalls the relist and the node goes NotReady; runtime-faults
// catches it at seed 2, see docs/architecture.md's regression variants).
const simRegressTag = "regress_94829"

// buildSimImage builds lockstep with the broken build's tag, statically
// (the image has no C library), makes an image of it with
// go-containerregistry and imports it into containerd.
func (e *env) buildSimImage(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockstep")
	build := exec.Command("go", "build", "-tags", simRegressTag, "-o", bin, "./cmd/lockstep")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the sweep binary: %v\n%s", err, b)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
		dir  bool
	}{
		{name: "usr/", mode: 0o755, dir: true}, {name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/lockstep", mode: 0o755, body: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	} {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if f.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	})
	if err != nil {
		t.Fatalf("image layer: %v", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatalf("image: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("image config: %v", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = v1.Config{Env: []string{"PATH=/usr/local/bin"}, Entrypoint: []string{"lockstep"}, WorkingDir: "/tmp"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatalf("image config: %v", err)
	}
	ref, err := name.ParseReference(simImage)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "image.tar")
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		t.Fatalf("write image %s: %v", simImage, err)
	}
	sock := filepath.Join(e.dir, "containerd", "containerd.sock")
	if b, err := exec.Command("ctr", "-a", sock, "-n", "k8s.io", "images", "import", path).CombinedOutput(); err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", simImage, err, b)
	}
}

// startJobController runs kube-controller-manager's job controller alone
// (as the admin) until the test ends.
func (e *env) startJobController(t *testing.T) {
	t.Helper()
	kcm := os.Getenv("LOCKSTEP_E2E_KCM")
	if kcm == "" {
		t.Fatal("LOCKSTEP_E2E_KCM unset: hack/e2e/run.sh builds kube-controller-manager and sets it")
	}
	kc := filepath.Join(e.dir, "admin.kubeconfig")
	logf, err := os.Create(filepath.Join(e.dir, "logs", "kube-controller-manager.log"))
	if err != nil {
		logf, err = os.CreateTemp("", "kcm-*.log")
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(kcm, "--kubeconfig", kc, "--leader-elect=false", "--controllers=job",
		"--authentication-skip-lookup", "--authorization-always-allow-paths=/healthz",
		"--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kube-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("kube-controller-manager log (%s), last part:\n%s", logf.Name(), tail(string(b), 3000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// simSweepJob is examples/sim-sweep-job.yaml adapted to this one-node
// cluster: 2 shards of the runtime-faults scenario's seeds 1..6, on the
// lockstep node (no scheduler here), with the local image.
func (e *env) simSweepJob(t *testing.T, shards int) *batchv1.Job {
	t.Helper()
	b, err := os.ReadFile("../examples/sim-sweep-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatalf("examples/sim-sweep-job.yaml: %v", err)
	}
	n := int32(shards)
	job.Name = "lockstep-sim-sweep-e2e"
	job.Spec.Completions, job.Spec.Parallelism = &n, &n
	pod := &job.Spec.Template.Spec
	pod.NodeName = e.node
	c := &pod.Containers[0]
	c.Image, c.ImagePullPolicy = simImage, corev1.PullNever
	c.Resources = corev1.ResourceRequirements{}
	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--scenario="):
			a = "--scenario=runtime-faults"
		case strings.HasPrefix(a, "--seeds="):
			a = "--seeds=1..6"
		case strings.HasPrefix(a, "--shard="):
			a = fmt.Sprintf("--shard=$(JOB_COMPLETION_INDEX)/%d", shards)
		case strings.HasPrefix(a, "--parallel="):
			a = "--parallel=1"
		case a == "--swarm", strings.HasPrefix(a, "--duration="):
			continue // the broken build is found by the fixed mix in a few seeds
		}
		args = append(args, a)
	}
	c.Args = append(args, "--shrink-runs=10")
	return &job
}

// The Indexed Job of examples/sim-sweep-job.yaml runs on this cluster, with
// lockstep as its node's kubelet: an image made of a lockstep binary (a
// deliberately broken build, so there are failures to find) imported into
// containerd, the job controller making one pod per shard, each shard
// sweeping its seeds and printing its failure records; the shards' logs,
// collected as the example says, merge into one report that names the
// broken invariant, with every record the shards printed.
func TestSimSweepJobOnCluster(t *testing.T) {
	e := setup(t)
	e.buildSimImage(t)
	e.startJobController(t)
	const shards = 2
	job := e.simSweepJob(t, shards)
	ctx := ctxT(t, 10*time.Minute)
	jobs := e.admin.BatchV1().Jobs("default")
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job %s: %v", job.Name, err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = jobs.Delete(context.Background(), job.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	})
	sel := "batch.kubernetes.io/job-name=" + job.Name
	var pods []corev1.Pod
	poll(t, 8*time.Minute, fmt.Sprintf("%d shards of job %s ended", shards, job.Name), func() (bool, error) {
		list, err := e.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		ended := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				ended++
			}
		}
		pods = list.Items
		return ended == shards && len(list.Items) == shards, fmt.Errorf("%d of %d pods ended", ended, len(list.Items))
	})
	dir := t.TempDir()
	var logs []string
	printed := 0
	for _, p := range pods {
		b, err := e.admin.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of shard %s: %v", p.Name, err)
		}
		idx := p.Annotations["batch.kubernetes.io/job-completion-index"]
		if !strings.Contains(string(b), fmt.Sprintf("(shard %s/%d)", idx, shards)) {
			t.Errorf("shard %s (index %q) did not run its shard:\n%s", p.Name, idx, tail(string(b), 2000))
		}
		printed += strings.Count(string(b), "lockstep-sim-record ")
		path := filepath.Join(dir, "shard-"+idx+".log")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, path)
		t.Logf("shard %s (index %s): phase %s", p.Name, idx, p.Status.Phase)
	}
	if printed == 0 {
		t.Fatalf("no shard printed a failure record of the broken build %s", simRegressTag)
	}
	merge := exec.Command(filepath.Join(e.dir, "bin", "lockstep"), append([]string{"sim", "merge"}, logs...)...)
	out, err := merge.CombinedOutput()
	if err == nil {
		t.Errorf("sim merge of failures exited 0:\n%s", out)
	}
	want := fmt.Sprintf("%d failure records from %d paths", printed, shards)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "node-ready:") {
		t.Errorf("merged report lacks %q and the broken invariant:\n%s", want, out)
	}
	if !strings.Contains(string(out), "go run -tags "+simRegressTag) {
		t.Errorf("merged report's replay commands do not name the broken build:\n%s", out)
	}
	t.Logf("FIGURE sim sweep job: %d shards, %d failure records merged", shards, printed)
}
