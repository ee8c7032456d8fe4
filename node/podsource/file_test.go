package podsource_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

const manifestDir = "etc/manifests"

const goodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx
  - name: sidecar
    image: busybox:1.36
`

// fileWorld runs a file source over in-memory files, recording what it
// reports.
type fileWorld struct {
	*world
	files    *memFiles
	reports  []string // "file: error"
	warnings []string // "file: error" of the Warn log lines
	cancel   context.CancelFunc
}

func startFiles(t *testing.T, files map[string]string, sources ...string) *fileWorld {
	t.Helper()
	return startFilesWatched(t, files, nil, sources...)
}

// startFilesWatched is startFiles with the directory watched by the
// DirChanges watch makes from the world's tasks (nil: not watched).
func startFilesWatched(t *testing.T, files map[string]string, watch func(deps.Tasks) deps.DirChanges, sources ...string) *fileWorld {
	t.Helper()
	if len(sources) == 0 {
		sources = []string{podsource.SourceFile}
	}
	fw := &fileWorld{world: newWorld(t, sources...), files: newMemFiles()}
	fw.files.fs[manifestDir] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	for name, content := range files {
		fw.files.write(manifestDir+"/"+name, content)
	}
	d := fw.d
	d.Files = fw.files
	d.Log = slog.New(&captureHandler{record: func(r slog.Record) {
		if r.Level != slog.LevelWarn {
			return
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		fw.warnings = append(fw.warnings, attrs["file"]+": "+attrs["error"])
	}})
	var changes deps.DirChanges
	if watch != nil {
		changes = watch(d.Tasks)
	}
	src := podsource.NewFileSource(d.Core, d.Files, changes, podsource.FileConfig{
		Dir:      manifestDir,
		NodeName: "node-1",
		OnManifestError: func(file string, err error) {
			fw.reports = append(fw.reports, file+": "+err.Error())
		},
	}, fw.m)
	ctx, cancel := d.Tasks.WithCancel(context.Background())
	fw.cancel = cancel
	t.Cleanup(cancel)
	d.Tasks.Go("file-source", func() { src.Run(ctx) })
	return fw
}

type captureHandler struct{ record func(slog.Record) }

func (h *captureHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error { h.record(r); return nil }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h *captureHandler) WithGroup(string) slog.Handler                 { return h }

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestFileSourceAddsStaticPod(t *testing.T) {
	fw := startFiles(t, map[string]string{"web.yaml": goodManifest})
	fw.run(time.Second)
	us := fw.updates()
	if diff := cmp.Diff([]string{"ADD file default/web-node-1"}, summarize(us)); diff != "" {
		t.Fatalf("updates (-want +got):\n%s", diff)
	}
	got := us[0].Pods[0]
	if !hex32.MatchString(string(got.UID)) {
		t.Errorf("UID %q is not 32 hex digits", got.UID)
	}
	grace := int64(30)
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web-node-1",
			Namespace: "default",
			UID:       got.UID,
			Labels:    map[string]string{"app": "web"},
			Annotations: map[string]string{
				podsource.AnnotationConfigSource: "file",
				podsource.AnnotationConfigHash:   string(got.UID),
				podsource.AnnotationConfigSeen:   "2026-01-01T00:00:00Z",
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{
				{Name: "nginx", Image: "nginx", ImagePullPolicy: corev1.PullAlways},
				{Name: "sidecar", Image: "busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("static pod (-want +got):\n%s", diff)
	}
	if !podutil.IsStaticPod(got) || podutil.IsMirrorPod(got) {
		t.Errorf("IsStaticPod %v, IsMirrorPod %v: want true, false", podutil.IsStaticPod(got), podutil.IsMirrorPod(got))
	}
	// Re-reads of the unchanged file change nothing, though time moved on.
	fw.run(time.Minute)
	if diff := cmp.Diff([]string(nil), fw.summary()); diff != "" {
		t.Errorf("re-reads (-want +got):\n%s", diff)
	}
	if len(fw.reports)+len(fw.warnings) != 0 {
		t.Errorf("reports %v, warnings %v", fw.reports, fw.warnings)
	}
}

func TestFileSourceEditRemoveAndIgnoredFiles(t *testing.T) {
	fw := startFiles(t, map[string]string{
		"web.yaml":       goodManifest,
		".hidden.yaml":   strings.Replace(goodManifest, "web", "hidden", 1),
		"notes.txt":      "not a manifest",
		"web.yaml.swp":   "editor junk",
		"sub/deep.yaml":  strings.Replace(goodManifest, "web", "deep", 1),
		"db.json":        `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db","namespace":"data"},"spec":{"containers":[{"name":"pg","image":"postgres:16"}]}}`,
		"cache.yml":      strings.Replace(goodManifest, "name: web", "name: cache", 1),
		"scheduler":      strings.Replace(goodManifest, "name: web", "name: scheduler", 1),
		"dir.yaml/x.txt": "a directory named like a manifest",
	})
	fw.run(time.Second)
	first := fw.updates()
	if diff := cmp.Diff([]string{"ADD file data/db-node-1,default/cache-node-1,default/scheduler-node-1,default/web-node-1"}, summarize(first)); diff != "" {
		t.Fatalf("first scan (-want +got):\n%s", diff)
	}
	oldUID := first[0].Pods[3].UID
	// Every non-hidden file is a manifest, whatever its name: the ones
	// that are not pods are reported, once.
	var reported []string
	for _, r := range fw.reports {
		reported = append(reported, r[:strings.Index(r, ":")])
	}
	if diff := cmp.Diff([]string{manifestDir + "/notes.txt", manifestDir + "/web.yaml.swp"}, reported); diff != "" {
		t.Errorf("reported files (-want +got):\n%s\nreports: %q", diff, fw.reports)
	}

	// A whitespace and comment edit is the same pod; the seen time stays.
	fw.files.write(manifestDir+"/web.yaml", "# a comment\n"+goodManifest+"\n\n")
	fw.run(20 * time.Second)
	if diff := cmp.Diff([]string(nil), fw.summary()); diff != "" {
		t.Errorf("reformatting (-want +got):\n%s", diff)
	}

	// A real edit is a new pod: the old one is removed, the new one added.
	fw.files.write(manifestDir+"/web.yaml", strings.Replace(goodManifest, "busybox:1.36", "busybox:1.37", 1))
	fw.run(20 * time.Second)
	us := fw.updates()
	if diff := cmp.Diff([]string{"REMOVE file default/web-node-1", "ADD file default/web-node-1"}, summarize(us)); diff != "" {
		t.Fatalf("edit (-want +got):\n%s", diff)
	}
	if us[0].Pods[0].UID != oldUID || us[1].Pods[0].UID == oldUID {
		t.Errorf("edit: removed UID %s, added UID %s; old UID %s", us[0].Pods[0].UID, us[1].Pods[0].UID, oldUID)
	}
	if seen := us[1].Pods[0].Annotations[podsource.AnnotationConfigSeen]; seen != "2026-01-01T00:00:40Z" {
		t.Errorf("edited pod seen at %s, want the scan's time 2026-01-01T00:00:40Z", seen)
	}

	fw.files.rm(manifestDir + "/db.json")
	fw.run(20 * time.Second)
	if diff := cmp.Diff([]string{"REMOVE file data/db-node-1"}, fw.summary()); diff != "" {
		t.Errorf("removal (-want +got):\n%s", diff)
	}
}

// scriptedChanges is a directory watch the test drives: change wakes
// Next, which reports the names given as removed.
type scriptedChanges struct {
	sig     deps.Signal
	mu      sync.Mutex
	removed []string
}

func (c *scriptedChanges) Next(ctx context.Context, _ string) ([]string, error) {
	if err := c.sig.Wait(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.removed
	c.removed = nil
	return r, nil
}

// change reports a change of the directory, removed naming the entries
// removed meanwhile.
func (c *scriptedChanges) change(removed ...string) {
	c.mu.Lock()
	c.removed = append(c.removed, removed...)
	c.mu.Unlock()
	c.sig.Notify()
}

// TestFileSourceRemovalWrittenBack: a manifest the watch saw removed is
// removed even though it was written back, unchanged, before the
// directory was read — the pod goes and comes back with the same UID and
// a new first-seen time, as the kubelet's watch handles the deletion
// event on its own (upstream's "should successfully recreate when file is
// removed and recreated"). A write that removed nothing changes nothing,
// and a removed broken manifest had no pod to remove.
func TestFileSourceRemovalWrittenBack(t *testing.T) {
	var changes *scriptedChanges
	fw := startFilesWatched(t, map[string]string{"web.yaml": goodManifest, "broken.yaml": "kind: Pod"}, func(tasks deps.Tasks) deps.DirChanges {
		changes = &scriptedChanges{sig: tasks.NewSignal("scripted changes")}
		return changes
	})
	fw.run(time.Second)
	first := fw.updates()
	if diff := cmp.Diff([]string{"ADD file default/web-node-1"}, summarize(first)); diff != "" {
		t.Fatalf("first scan (-want +got):\n%s", diff)
	}
	uid := first[0].Pods[0].UID

	fw.files.rm(manifestDir + "/web.yaml")
	fw.files.write(manifestDir+"/web.yaml", goodManifest)
	changes.change("web.yaml")
	fw.run(time.Second)
	us := fw.updates()
	if diff := cmp.Diff([]string{"REMOVE file default/web-node-1", "ADD file default/web-node-1"}, summarize(us)); diff != "" {
		t.Fatalf("removed and written back (-want +got):\n%s", diff)
	}
	if us[0].Pods[0].UID != uid || us[1].Pods[0].UID != uid {
		t.Errorf("removed %s, added %s: want the same UID %s", us[0].Pods[0].UID, us[1].Pods[0].UID, uid)
	}
	if seen := us[1].Pods[0].Annotations[podsource.AnnotationConfigSeen]; seen != "2026-01-01T00:00:01Z" {
		t.Errorf("written-back pod seen at %s, want the scan's time 2026-01-01T00:00:01Z", seen)
	}

	fw.files.write(manifestDir+"/web.yaml", goodManifest)
	changes.change()
	fw.files.rm(manifestDir + "/broken.yaml")
	fw.files.write(manifestDir+"/broken.yaml", "kind: Pod")
	changes.change("broken.yaml")
	fw.run(time.Second)
	if diff := cmp.Diff([]string(nil), fw.summary()); diff != "" {
		t.Errorf("a plain write and a broken manifest's removal (-want +got):\n%s", diff)
	}
}

func TestFileSourceReportsBrokenManifestsOnce(t *testing.T) {
	tests := []struct {
		name, manifest, wantErr string
	}{
		{"bad yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", "parse pod manifest"},
		{"unknown field", strings.Replace(goodManifest, "  labels:", "  labelz:", 1), `unknown field "labelz"`},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n", "at least one container is required"},
		{"duplicate container names", strings.Replace(goodManifest, "name: sidecar", "name: nginx", 1), `duplicate container name "nginx"`},
		{"wrong kind", strings.Replace(goodManifest, "kind: Pod", "kind: Deployment", 1), `kind is "Deployment", want "Pod"`},
		{"empty file", "", `kind is "", want "Pod"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := startFiles(t, map[string]string{
				"good.yaml":   strings.Replace(goodManifest, "name: web", "name: good", 1),
				"broken.yaml": tt.manifest,
			})
			fw.run(time.Minute) // four scans
			if diff := cmp.Diff([]string{"ADD file default/good-node-1"}, fw.summary()); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
			file := manifestDir + "/broken.yaml"
			if len(fw.reports) != 1 || !strings.HasPrefix(fw.reports[0], file+": static pod manifest "+file+": ") ||
				!strings.Contains(fw.reports[0], tt.wantErr) {
				t.Errorf("reports %q: want one about %s containing %q", fw.reports, file, tt.wantErr)
			}
			if diff := cmp.Diff(fw.reports, fw.warnings); diff != "" {
				t.Errorf("log lines differ from reports (-reports +log):\n%s", diff)
			}

			// Fixed: the pod is added. Broken again: reported again.
			fw.files.write(file, goodManifest)
			fw.run(20 * time.Second)
			if diff := cmp.Diff([]string{"ADD file default/web-node-1"}, fw.summary()); diff != "" {
				t.Errorf("after the fix (-want +got):\n%s", diff)
			}
			fw.files.write(file, tt.manifest)
			fw.run(time.Minute)
			if diff := cmp.Diff([]string{"REMOVE file default/web-node-1"}, fw.summary()); diff != "" {
				t.Errorf("after breaking it again (-want +got):\n%s", diff)
			}
			if len(fw.reports) != 2 || fw.reports[1] != fw.reports[0] {
				t.Errorf("reports %q: want the same error reported a second time", fw.reports)
			}
		})
	}
}

func TestFileSourceDuplicatePodName(t *testing.T) {
	fw := startFiles(t, map[string]string{
		"a.yaml": goodManifest,
		"b.yaml": strings.Replace(goodManifest, "busybox:1.36", "busybox:1.37", 1),
	})
	fw.run(time.Minute)
	us := fw.updates()
	if diff := cmp.Diff([]string{"ADD file default/web-node-1"}, summarize(us)); diff != "" {
		t.Fatalf("updates (-want +got):\n%s", diff)
	}
	if img := us[0].Pods[0].Spec.Containers[1].Image; img != "busybox:1.36" {
		t.Errorf("kept the pod of image %s, want the first file's busybox:1.36", img)
	}
	want := []string{manifestDir + "/b.yaml: static pod manifest " + manifestDir + "/b.yaml: pod default/web-node-1 is already defined by " + manifestDir + "/a.yaml"}
	if diff := cmp.Diff(want, fw.reports); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

func TestFileSourceReadErrors(t *testing.T) {
	fw := startFiles(t, map[string]string{"web.yaml": goodManifest})
	fw.run(time.Second)
	fw.summary()
	file := manifestDir + "/web.yaml"

	// A file that cannot be read keeps its pod, and is reported once.
	fw.files.readFileErr[file] = errors.New("input/output error")
	fw.run(time.Minute)
	if diff := cmp.Diff([]string(nil), fw.summary()); diff != "" {
		t.Errorf("unreadable file (-want +got):\n%s", diff)
	}
	wantReport := fmt.Sprintf("%s: read static pod manifest %s: input/output error", file, file)
	if diff := cmp.Diff([]string{wantReport}, fw.reports); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	delete(fw.files.readFileErr, file)

	// An unreadable directory changes nothing either.
	fw.files.readDirErr = errors.New("permission denied")
	fw.run(time.Minute)
	if diff := cmp.Diff([]string(nil), fw.summary()); diff != "" {
		t.Errorf("unreadable directory (-want +got):\n%s", diff)
	}
	if len(fw.reports) != 2 || !strings.Contains(fw.reports[1], "read static pod directory "+manifestDir+": permission denied") {
		t.Errorf("reports %q: want a second one about the directory", fw.reports)
	}
	fw.files.readDirErr = nil

	// A directory that is gone means no static pods.
	fw.files.rm(file)
	delete(fw.files.fs, manifestDir)
	fw.run(20 * time.Second)
	if diff := cmp.Diff([]string{"REMOVE file default/web-node-1"}, fw.summary()); diff != "" {
		t.Errorf("directory gone (-want +got):\n%s", diff)
	}
	if len(fw.reports) != 2 {
		t.Errorf("reports %q: a missing directory is not an error", fw.reports)
	}
}

func TestFileSourceSeenBeforeAndWithoutFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*memFiles)
		seen  bool
	}{
		{"empty directory", func(*memFiles) {}, true},
		{"missing directory", func(m *memFiles) { delete(m.fs, manifestDir) }, true},
		{"unreadable directory", func(m *memFiles) { m.readDirErr = errors.New("permission denied") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw := startFiles(t, nil)
			tc.setup(fw.files)
			fw.run(time.Second)
			if got := fw.m.Seen(podsource.SourceFile); got != tc.seen {
				t.Errorf("Seen(file) = %v, want %v", got, tc.seen)
			}
		})
	}
}

// TestAllSeenWaitsForBothSources: the file source delivers at once, the API
// source only after the apiserver stops failing.
func TestAllSeenWaitsForBothSources(t *testing.T) {
	fw := startFiles(t, map[string]string{"web.yaml": goodManifest}, podsource.SourceAPI, podsource.SourceFile)
	api := newFakePodAPI(fw.d)
	api.put(apiPod("a"))
	api.listErrs = []error{errors.New("down"), errors.New("down"), errors.New("down")}
	d := fw.d
	d.API.Pods = api
	src := podsource.NewAPISource(d.Core, d.API.Pods, "node-1", fw.m)
	d.Tasks.Go("api-source", func() { src.Run(context.Background()) })

	fw.run(time.Second)
	if !fw.m.Seen(podsource.SourceFile) || fw.m.Seen(podsource.SourceAPI) || fw.m.AllSeen() {
		t.Errorf("at 1s: Seen(file) %v, Seen(api) %v, AllSeen %v; want true, false, false",
			fw.m.Seen(podsource.SourceFile), fw.m.Seen(podsource.SourceAPI), fw.m.AllSeen())
	}
	if err := fw.k.RunUntil(fw.m.AllSeen, time.Minute); err != nil {
		t.Fatal(err)
	}
	if at := fw.k.Elapsed(); at < 1500*time.Millisecond || at > 3*time.Second {
		t.Errorf("all seen at %v, want after the backed-off list retries (1.5s to 3s)", at)
	}
	if diff := cmp.Diff([]string{"ADD file default/web-node-1", "ADD api ns/a"}, fw.summary()); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestFileSourceWithoutDirectory(t *testing.T) {
	w := newWorld(t, podsource.SourceFile)
	src := podsource.NewFileSource(w.d.Core, w.d.Files, nil, podsource.FileConfig{NodeName: "node-1"}, w.m)
	w.d.Tasks.Go("file-source", func() { src.Run(context.Background()) })
	if err := w.k.Run(); err != nil {
		t.Fatal(err)
	}
	if !w.m.AllSeen() {
		t.Error("a file source without a directory was not seen")
	}
}
