package plugin_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// supported are the source fields the registry sets up.
var supported = map[string]string{
	"emptyDir": plugin.NameEmptyDir, "hostPath": plugin.NameHostPath, "configMap": plugin.NameConfigMap,
	"secret": plugin.NameSecret, "downwardAPI": plugin.NameDownwardAPI, "projected": plugin.NameProjected,
	"persistentVolumeClaim": plugin.NameLocalVolume,
}

// TestEverySourceFieldHasOneAnswer sets each field of the API's
// VolumeSource in turn: exactly the supported ones have a plugin, and
// exactly one; every field is named by SourceField (admission's warning
// for the others), so a new API field needs no list kept by hand.
func TestEverySourceFieldHasOneAnswer(t *testing.T) {
	typ := reflect.TypeFor[corev1.VolumeSource]()
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v := &corev1.Volume{Name: "v"}
		reflect.ValueOf(&v.VolumeSource).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		if got := plugin.SourceField(v); got != name {
			t.Errorf("SourceField of %s = %q", name, got)
		}
		var matched []string
		for _, p := range plugin.All() {
			if p.CanSupport(v) {
				matched = append(matched, p.Name())
			}
		}
		p, ok := plugin.For(v)
		want, isSupported := supported[name]
		switch {
		case !isSupported && (ok || len(matched) > 0):
			t.Errorf("%s: plugins %v support it; want none", name, matched)
		case isSupported && (!ok || p.Name() != want || len(matched) != 1):
			t.Errorf("%s: plugins %v support it; want only %s", name, matched, want)
		}
		seen[name] = ok
	}
	for name := range supported {
		if !seen[name] {
			t.Errorf("supported field %s is not in the API's VolumeSource", name)
		}
	}
	if got := plugin.SourceField(&corev1.Volume{Name: "none"}); got != "" {
		t.Errorf("SourceField of a volume with no source = %q, want empty", got)
	}
}

// facts is what a plugin says about a volume without acting.
type facts struct {
	Name, Dir    string
	ReadOnly     bool
	ResolveOnce  bool
	Ignored      []string
	CMs, Secrets []string
	Storage      plugin.Storage
}

func factsOf(t *testing.T, v *corev1.Volume) facts {
	t.Helper()
	p, ok := plugin.For(v)
	if !ok {
		t.Fatalf("volume %s: no plugin", v.Name)
	}
	cms, secs := plugin.References(v)
	return facts{Name: p.Name(), Dir: p.Dir("/r/pods/u/volumes", v), ReadOnly: p.ReadOnly(v), ResolveOnce: p.ResolveOnce(v),
		Ignored: p.IgnoredFields(v), CMs: cms, Secrets: secs, Storage: p.Storage(v)}
}

// TestPluginFacts: where each type lives, how it is mounted, what it
// reads and how its usage counts, as the code this registry replaced
// said (podspec, stats, statssummary, eviction, admission, objcache).
func TestPluginFacts(t *testing.T) {
	limit := resource.MustParse("1Mi")
	dir := func(plugin, name string) string { return "/r/pods/u/volumes/" + plugin + "/" + name }
	cases := []struct {
		src  corev1.VolumeSource
		want facts
	}{
		{corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}},
			facts{Name: plugin.NameEmptyDir, Dir: dir(plugin.NameEmptyDir, "v"),
				Storage: plugin.Storage{Measured: true, PodEphemeral: true, EvictionLocal: true, SizeLimit: &limit}}},
		{corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}},
			facts{Name: plugin.NameEmptyDir, Dir: dir(plugin.NameEmptyDir, "v"), Storage: plugin.Storage{Measured: true}}},
		{corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}},
			facts{Name: plugin.NameEmptyDir, Dir: dir(plugin.NameEmptyDir, "v"), Ignored: []string{"emptyDir.medium"},
				Storage: plugin.Storage{Measured: true, EvictionLocal: true}}},
		{corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data/"}},
			facts{Name: plugin.NameHostPath, Dir: "/srv/data"}},
		{corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			facts{Name: plugin.NameConfigMap, Dir: dir(plugin.NameConfigMap, "v"), ReadOnly: true, CMs: []string{"cm"},
				Storage: plugin.Storage{Measured: true, PodEphemeral: true}}},
		{corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}},
			facts{Name: plugin.NameSecret, Dir: dir(plugin.NameSecret, "v"), ReadOnly: true, Secrets: []string{"s"},
				Storage: plugin.Storage{Measured: true}}},
		{corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}},
			facts{Name: plugin.NameDownwardAPI, Dir: dir(plugin.NameDownwardAPI, "v"), ReadOnly: true}},
		{corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s2"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}},
			facts{Name: plugin.NameProjected, Dir: dir(plugin.NameProjected, "v"), ReadOnly: true, CMs: []string{"a", "b"}, Secrets: []string{"s2"}}},
		{corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}},
			facts{Name: plugin.NameLocalVolume, Dir: dir(plugin.NameLocalVolume, "v"), ReadOnly: true, ResolveOnce: true}},
		{corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
			facts{Name: plugin.NameLocalVolume, Dir: dir(plugin.NameLocalVolume, "v"), ResolveOnce: true}},
	}
	for _, tc := range cases {
		v := &corev1.Volume{Name: "v", VolumeSource: tc.src}
		if diff := cmp.Diff(tc.want, factsOf(t, v)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", plugin.SourceField(v), diff)
		}
	}
}

// TestNamesAreDistinct: each plugin has a directory of its own.
func TestNamesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range plugin.All() {
		if seen[p.Name()] {
			t.Errorf("two plugins named %s", p.Name())
		}
		seen[p.Name()] = true
	}
}
