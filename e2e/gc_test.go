//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pauseImage is the sandbox image hack/e2e/build-images.sh imports (and
// containerd's sandbox_image; containerd 1.6 does not pin it).
const pauseImage = "docker.io/library/pause:e2e"

// images returns a CRI image service client on the e2e containerd.
func (e *env) images(t *testing.T) runtimeapi.ImageServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(e.dir, "containerd", "containerd.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial containerd: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewImageServiceClient(conn)
}

// importImage builds a one-layer OCI image named ref holding one file of
// content (so that its ID is its own) and imports it into containerd's
// k8s.io namespace with ctr, as hack/e2e/build-images.sh does.
func (e *env) importImage(t *testing.T, ref, content string) {
	t.Helper()
	blobs := map[string][]byte{}
	add := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		blobs[d] = b
		return d, len(b)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	_ = tw.WriteHeader(&tar.Header{Name: "gc-victim.txt", Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	ld, ls := add(layer.Bytes())
	cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{"Cmd": []string{"/gc-victim.txt"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + ld}}})
	cd, cs := add(cfg)
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + cd, "size": cs},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + ld, "size": ls}}})
	md, ms := add(man)
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{map[string]any{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + md, "size": ms,
		"platform":    map[string]any{"architecture": "amd64", "os": "linux"},
		"annotations": map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": "e2e"}}}})
	var out bytes.Buffer
	ow := tar.NewWriter(&out)
	file := func(name string, b []byte) {
		_ = ow.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Unix(0, 0)})
		_, _ = ow.Write(b)
	}
	file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	file("index.json", index)
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for d := range blobs {
			if !yield(d) {
				return
			}
		}
	}) {
		file("blobs/sha256/"+d, blobs[d])
	}
	_ = ow.Close()
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(e.dir, "containerd", "containerd.sock")
	if b, err := exec.Command("ctr", "-a", sock, "-n", "k8s.io", "images", "import", "--no-unpack=false", path).CombinedOutput(); err != nil {
		if b2, err2 := exec.Command("ctr", "-a", sock, "-n", "k8s.io", "images", "import", path).CombinedOutput(); err2 != nil {
			t.Fatalf("ctr images import: %v %s / %v %s", err, b, err2, b2)
		}
	}
}

// present reports whether containerd has an image named ref.
func present(t *testing.T, is runtimeapi.ImageServiceClient, ref string) bool {
	t.Helper()
	resp, err := is.ImageStatus(context.Background(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("image status %s: %v", ref, err)
	}
	return resp.GetImage() != nil
}

// With the image GC thresholds set to 1 % / 0 % and no minimum age, the
// collector removes an image no container uses at its first pass, keeps
// busybox (a running pod uses it) and the sandbox image
// (--pod-infra-container-image), counts the removal in
// kubelet_image_garbage_collected_total and, unable to reach 0 %, says
// so with a FreeDiskSpaceFailed event on the node. Only this test runs
// with those thresholds: lockstep gets its arguments back at the end.
func TestImageGCRemovesUnusedImage(t *testing.T) {
	e := setup(t)
	is := e.images(t)
	victim := "docker.io/library/gc-victim:" + rand.String(8)
	e.importImage(t, victim, "unused image of the image GC test "+victim)
	if !present(t, is, victim) {
		t.Fatalf("%s not in containerd after the import", victim)
	}
	user := e.create(t, e.pod("gc-user", true, sleeper))
	e.waitPod(t, user, 60*time.Second, "Running and Ready", podReady)
	start := time.Now()
	e.withLockstepArgs(t, "--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--minimum-image-ttl-duration=0s",
		"--pod-infra-container-image="+pauseImage)
	poll(t, 60*time.Second, victim+" removed", func() (bool, error) { return !present(t, is, victim), nil })
	t.Logf("FIGURE unused image removed %v after lockstep restarted with low thresholds", time.Since(start).Round(time.Second))
	for _, keep := range []string{busybox, pauseImage} {
		if !present(t, is, keep) {
			t.Errorf("%s was removed", keep)
		}
	}
	if g := e.get(t, user); !podReady(g) {
		t.Errorf("the busybox pod is not running: phase %s", g.Status.Phase)
	}
	poll(t, 20*time.Second, "kubelet_image_garbage_collected_total", func() (bool, error) {
		code, body := e.nodeGet(t, "/metrics", e.adminTok)
		m := regexp.MustCompile(`(?m)^kubelet_image_garbage_collected_total\{reason="space"\} (\d+)`).FindStringSubmatch(body)
		if code != 200 || m == nil {
			return false, fmt.Errorf("status %d, no counter", code)
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 1, fmt.Errorf("counter %d", n)
	})
	poll(t, 20*time.Second, "FreeDiskSpaceFailed event", func() (bool, error) {
		evs, err := e.admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FreeDiskSpaceFailed"})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "Node" && ev.InvolvedObject.Name == e.node && ev.LastTimestamp.After(start.Add(-time.Second)) &&
				strings.HasPrefix(ev.Message, "Insufficient free disk space on the node's image filesystem (") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d FreeDiskSpaceFailed events, none new on the node", len(evs.Items))
	})
}

// checkNumbered checks that out is "line <n> <padding>" lines with n
// growing by one (at least 1000 of them when long: 25 s of writing).
func checkNumbered(t *testing.T, what, out string, long bool) {
	t.Helper()
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i] // a line cut by the end of a follow is dropped
	}
	lines := strings.Split(out, "\n")
	prev := -1
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "line" {
			t.Fatalf("%s: line %q", what, l)
		}
		n, _ := strconv.Atoi(f[1])
		if prev >= 0 && n != prev+1 {
			t.Errorf("%s: line %d after %d", what, n, prev)
		}
		prev = n
	}
	t.Logf("%s: %d lines, the last %d", what, len(lines), prev)
	if long && len(lines) < 1000 {
		t.Errorf("%s: only %d lines in 25 s", what, len(lines))
	}
}

// With containerLogMaxSize 64Ki and containerLogMaxFiles 3, a container
// writing about 40 KiB/s has its log rotated every 10 s check: rotated
// files appear (the older ones gzipped), never more than 3 files, and
// kubectl logs keeps serving the current file, and kubectl logs -f
// follows the log across rotations: every line once, in order.
func TestLogRotationKeepsLogsReadable(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	e.withLockstepArgs(t, "--container-log-max-size=64Ki", "--container-log-max-files=3")
	p := e.create(t, e.pod("chatty", true,
		`i=0; pad=$(head -c 96 /dev/zero | tr '\0' x); while :; do i=$((i+1)); echo "line $i $pad"; [ $((i % 40)) = 0 ] && sleep 0.1; done`))
	p = e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
	dir := filepath.Join(e.dir, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "c")
	var names []string
	maxFiles := 0
	poll(t, 60*time.Second, "a compressed rotated log", func() (bool, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false, err
		}
		names = names[:0]
		gz := false
		for _, en := range ents {
			names = append(names, en.Name())
			gz = gz || strings.HasSuffix(en.Name(), ".gz")
		}
		maxFiles = max(maxFiles, len(names))
		return gz, fmt.Errorf("files %v", names)
	})
	t.Logf("log files after rotations: %v", names)
	if maxFiles > 3 {
		t.Errorf("%d log files at once, want at most 3", maxFiles)
	}
	// kubectl logs -f for 25 s, across two or three rotations: every line
	// once, in order, none missing.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var followed, errOut bytes.Buffer
	c := k.cmd(ctx, nil, "logs", "-f", "--tail=1", p.Name)
	c.Stdout, c.Stderr = &followed, &errOut
	_ = c.Run() // ends when the context does
	checkNumbered(t, "kubectl logs -f", followed.String(), true)
	out, stderr, err := k.run(t, nil, "", "logs", "--tail=50", p.Name)
	if err != nil {
		t.Fatalf("kubectl logs: %v %q", err, stderr)
	}
	checkNumbered(t, "kubectl logs --tail=50", out, false)
	var hasRotated bool
	for _, n := range names {
		hasRotated = hasRotated || regexp.MustCompile(`^0\.log\.\d{8}-\d{6}$`).MatchString(n)
	}
	if !hasRotated {
		t.Errorf("no plain rotated file 0.log.<timestamp> among %v", names)
	}
}
