package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLocalVolume: a side's copy of a scenario's local PersistentVolume
// has the namespace's name, a host directory of its own (created, 0755)
// as its path, no claimRef, and a node affinity to the side's node only.
func TestLocalVolume(t *testing.T) {
	dir := t.TempDir()
	sd := &side{agent: "kubelet", node: KubeletNode, localVolumes: dir}
	tmpl := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/set-by-the-driver"}},
		ClaimRef:               &v1.ObjectReference{Name: "stale"},
	}}
	pv, err := localVolume(tmpl, sd, "fsgroup-local-pv-k")
	if err != nil {
		t.Fatal(err)
	}
	wantPath := filepath.Join(dir, "fsgroup-local-pv-k-data")
	want := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "fsgroup-local-pv-k-data"}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: wantPath}},
		NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{KubeletNode}}},
		}}}},
	}}
	if diff := cmp.Diff(want, pv); diff != "" {
		t.Errorf("local volume (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(wantPath)
	if err != nil {
		t.Fatalf("host directory: %v", err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("host directory mode %v, want a 0755 directory", fi.Mode())
	}
	if tmpl.Spec.Local.Path != "/set-by-the-driver" || tmpl.Spec.ClaimRef == nil {
		t.Errorf("the scenario's template was changed: %+v", tmpl.Spec)
	}
}
