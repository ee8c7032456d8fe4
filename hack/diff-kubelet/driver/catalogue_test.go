package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestCatalogueLoads: every scenario file of the catalogue parses strictly
// (unknown fields are errors), validates, and the catalogue has the
// issue's >= 50 scenarios with a summary each.
func TestCatalogueLoads(t *testing.T) {
	ss, err := loadCatalogue("../scenarios", "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) < 50 {
		t.Errorf("catalogue has %d scenarios, want >= 50", len(ss))
	}
	for _, s := range ss {
		if s.Duration.Duration > 2*time.Minute {
			t.Errorf("%s: duration %v, want <= 2m (the catalogue must run in minutes)", s.Name, s.Duration)
		}
	}
}

func TestParseScenario(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		wantExclusive       bool
		wantOrder           []string
	}{
		{name: "ok", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 5s, do: logs, pod: p}, {at: 2s, do: delete, pod: p}]",
			wantOrder: []string{"delete", "logs"}},
		{name: "restart", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: restart-agent}]", wantExclusive: true, wantOrder: []string{"restart-agent"}},
		{name: "fill", yaml: "summary: s\nduration: 10s\nfill: 3", wantExclusive: true},
		{name: "nosummary", yaml: "duration: 10s", wantErr: "no summary"},
		{name: "unknown-field", yaml: "summary: s\nduration: 10s\nbogus: 1", wantErr: "unknown field"},
		{name: "late", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 11s, do: delete, pod: p}]", wantErr: "after the scenario's end"},
		{name: "unknown-pod", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: delete, pod: q}]", wantErr: "unknown pod"},
		{name: "unknown-kind", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: dance}]", wantErr: "unknown kind"},
		{name: "exec-no-cmd", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 1s, do: exec, pod: p}]", wantErr: "lacks its argument"},
		{name: "dup", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nstatic: [{metadata: {name: p}}]", wantErr: "twice"},
		{name: "bad-duration", yaml: "summary: s\nduration: soon", wantErr: "invalid duration"},
		{name: "pv-and-claim", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolume: {metadata: {name: v}, spec: {local: {path: /x}}}}, {persistentVolumeClaim: {metadata: {name: c}, spec: {volumeName: v}}}]"},
		{name: "claim-unknown-volume", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolumeClaim: {metadata: {name: c}, spec: {volumeName: v}}}]", wantErr: "naming one of the scenario's persistentVolumes"},
		{name: "pv-not-local", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolume: {metadata: {name: v}}}]", wantErr: "spec.local"},
		{name: "patch-static", yaml: "summary: s\nduration: 10s\nstatic: [{metadata: {name: p}}]\nactions: [{at: 1s, do: patch-static, pod: p, repeat: 3, every: 1s, patch: {metadata: {labels: {v: '{{n}}'}}}}]",
			wantOrder: []string{"patch-static"}},
		{name: "patch-static-no-patch", yaml: "summary: s\nduration: 10s\nstatic: [{metadata: {name: p}}]\nactions: [{at: 1s, do: patch-static, pod: p}]", wantErr: "lacks its argument"},
		{name: "patch-static-not-static", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 1s, do: patch-static, pod: p, patch: {metadata: {labels: {v: '1'}}}}]", wantErr: "not a static pod"},
		{name: "patch-static-late", yaml: "summary: s\nduration: 10s\nstatic: [{metadata: {name: p}}]\nactions: [{at: 5s, do: patch-static, pod: p, repeat: 4, every: 2s, patch: {metadata: {labels: {v: '{{n}}'}}}}]", wantErr: "last rewrite at 11s"},
		{name: "repeat-not-patch-static", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 1s, do: delete, pod: p, repeat: 2}]", wantErr: "patch-static's"},
		{name: "two-kinds", yaml: "summary: s\nduration: 10s\nobjects: [{configMap: {metadata: {name: a}}, secret: {metadata: {name: b}}}]", wantErr: "exactly one"},
	} {
		s, err := parseScenario(tc.name, []byte(tc.yaml))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var order []string
		for _, a := range s.Actions {
			order = append(order, a.Do)
		}
		if s.Exclusive != tc.wantExclusive {
			t.Errorf("%s: exclusive %v, want %v", tc.name, s.Exclusive, tc.wantExclusive)
		}
		if diff := cmp.Diff(tc.wantOrder, order); diff != "" {
			t.Errorf("%s: action order (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestPatchStaticRewritesTheManifest: patch-static's rewrites, each its
// own version ("{{n}}" its number), leave the manifest a valid pod with
// the last version's fields and the others untouched, and no temporary
// file behind in the manifest directory.
func TestPatchStaticRewritesTheManifest(t *testing.T) {
	s, err := parseScenario("ps", []byte(`summary: s
duration: 10s
static:
- metadata: {name: st}
  spec:
    terminationGracePeriodSeconds: 20
    containers:
    - {name: app, image: busybox, env: [{name: FAKECRI_IGNORE_SIGTERM, value: "1"}]}
actions:
- {at: 1s, do: patch-static, pod: st, repeat: 3, patch: {metadata: {annotations: {version: "v{{n}}"}}, spec: {containers: [{name: app, image: "busybox:{{n}}"}]}}}
- {at: 5s, do: patch-static, pod: st, patch: {spec: {containers: [{name: app, image: nginx}]}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ps-k-st.yaml")
	data, err := staticManifest(&s.Static[0], "ps-k")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, a := range s.Actions {
		if err := patchStatic(context.Background(), a, path); err != nil {
			t.Fatal(err)
		}
		var p v1.Pod
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			t.Fatalf("manifest after %s: %v\n%s", a.Do, err, data)
		}
		versions = append(versions, p.Annotations["version"]+" "+p.Spec.Containers[0].Image)
		want := s.Static[0].DeepCopy()
		want.APIVersion, want.Kind, want.Namespace = "v1", "Pod", "ps-k"
		want.Annotations = p.Annotations
		want.Spec.Containers[0].Image = p.Spec.Containers[0].Image
		if diff := cmp.Diff(want, &p); diff != "" {
			t.Errorf("manifest after the rewrites of %v changed more than the patch (-want +got):\n%s", a.At, diff)
		}
	}
	if diff := cmp.Diff([]string{"v3 busybox:3", "v3 nginx"}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"ps-k-st.yaml"}, names); diff != "" {
		t.Errorf("manifest directory (-want +got):\n%s", diff)
	}
}

// TestPatchStaticEachRewriteIsANewFile: every rewrite replaces the
// manifest by a new file (a rename, as an editor's atomic save), never
// writing into the one an agent may be reading, and a patch that does not
// apply leaves the manifest as it was.
func TestPatchStaticEachRewriteIsANewFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.yaml")
	orig := "apiVersion: v1\nkind: Pod\nmetadata: {name: st}\nspec: {containers: [{name: app, image: busybox}]}\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(path) // an agent in the middle of reading the first version
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	a := Action{Do: "patch-static", Repeat: 2, Patch: []byte(`{"metadata":{"labels":{"v":"{{n}}"}}}`)}
	if err := patchStatic(context.Background(), a, path); err != nil {
		t.Fatal(err)
	}
	old, err := io.ReadAll(reader)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig, string(old)); diff != "" {
		t.Errorf("the file open before the rewrites changed (-want +got):\n%s", diff)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(before), "v: \"2\"") {
		t.Errorf("manifest after two rewrites:\n%s\nwant label v: \"2\"", before)
	}
	err = patchStatic(context.Background(), Action{Do: "patch-static", Patch: []byte(`{"spec":{"containers":[{"image":"nginx"}]}}`)}, path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a patch that does not apply (no merge key): error %v, want one naming %s", err, path)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("manifest changed by a failed patch (-before +after):\n%s", diff)
	}
}
