package plugin_test

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

func i32(v int32) *int32 { return &v }

func file(p string, data []byte, mode fs.FileMode) plugin.File {
	return plugin.File{Path: p, Data: data, Mode: mode}
}

// downwardOf is the pod's downward API values on a node of no facts.
func downwardOf(pod *corev1.Pod) func(*corev1.DownwardAPIVolumeFile) (string, error) {
	return func(item *corev1.DownwardAPIVolumeFile) (string, error) {
		return podspec.DownwardAPIValue(pod, item, podspec.NodeInfo{})
	}
}

// fsUserOf is the pod's file user, as the volume manager gives it.
func fsUserOf(pod *corev1.Pod) *int64 {
	if uid, ok := podspec.FSUser(pod); ok {
		return &uid
	}
	return nil
}

func TestPayloadOf(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x", "tier": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
	}
	src := plugin.NewSources(
		map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		map[string]*corev1.Secret{"s": {Data: map[string][]byte{"user": []byte("root"), "pw": []byte("x")}}},
		map[int]string{3: "tok-3"}, downwardOf(pod), fsUserOf(pod))
	no := false
	yes := true
	cases := []struct {
		name    string
		vol     corev1.VolumeSource
		want    plugin.Payload
		wantErr string
	}{
		{name: "configMap, every key, default mode",
			vol:  corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			want: plugin.Payload{"a": file("a", []byte("1"), 0o644), "b": file("b", []byte("2"), 0o644), "bin": file("bin", []byte{0, 1}, 0o644)}},
		{name: "configMap items with modes",
			vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
				DefaultMode: i32(0o600), Items: []corev1.KeyToPath{{Key: "a", Path: "dir/one"}, {Key: "b", Path: "two", Mode: i32(0o400)}}}},
			want: plugin.Payload{"dir/one": file("dir/one", []byte("1"), 0o600), "two": file("two", []byte("2"), 0o400)}},
		{name: "configMap missing item",
			vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
				Items: []corev1.KeyToPath{{Key: "zz", Path: "z"}}}},
			wantErr: `configuration error: key "zz" not found in configmap "cm"`},
		{name: "missing configMap",
			vol:     corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &no}},
			wantErr: `configmap "nope" not found`},
		{name: "missing optional secret",
			vol:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope", Optional: &yes}},
			want: plugin.Payload{}},
		{name: "secret items",
			vol:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "user", Path: "u"}}}},
			want: plugin.Payload{"u": file("u", []byte("root"), 0o644)}},
		{name: "path escaping the volume",
			vol:     corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "user", Path: "../u"}}}},
			wantErr: `secret "s" key "user": invalid path "../u"`},
		{name: "downwardAPI labels and name",
			vol: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			}}},
			want: plugin.Payload{"labels": file("labels", []byte("app=\"x\"\ntier=\"web\""), 0o644), "name": file("name", []byte("p"), 0o644)}},
		{name: "projected sources merged",
			vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: i32(0o440), Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "pw", Path: "pw"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}},
			want: plugin.Payload{"a": file("a", []byte("1"), 0o440), "pw": file("pw", []byte("x"), 0o440), "ns": file("ns", []byte("ns"), 0o440),
				"token": file("token", []byte("tok-3"), 0o440)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &corev1.Volume{Name: "v", VolumeSource: tc.vol}
			got, err := plugin.PayloadOf(pod, v, src)
			checkPayload(t, got, err, tc.want, tc.wantErr)
		})
	}
}

// TestPayloadTokenPrivate: a projected token is 0600 (the ownership step
// then makes it 0640) when the pod has an fsGroup or one runAsUser for all
// its containers, and owned by that user, as upstream's projected plugin
// writes it (projected.go collectData, FsUserFrom).
func TestPayloadTokenPrivate(t *testing.T) {
	uid, gid := int64(1000), int64(2000)
	vol := &corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: i32(0o644),
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	cases := []struct {
		name string
		sc   *corev1.PodSecurityContext
		c    []corev1.Container
		want fs.FileMode
		user *int64
	}{
		{"no security context", nil, []corev1.Container{{Name: "a"}}, 0o644, nil},
		{"fsGroup", &corev1.PodSecurityContext{FSGroup: &gid}, []corev1.Container{{Name: "a"}}, 0o600, nil},
		{"pod runAsUser", &corev1.PodSecurityContext{RunAsUser: &uid}, []corev1.Container{{Name: "a"}, {Name: "b"}}, 0o600, &uid},
		{"containers differ", nil, []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{RunAsUser: &uid}}, {Name: "b"}}, 0o644, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.sc, Containers: tc.c}}
			got, err := plugin.PayloadOf(pod, vol, plugin.NewSources(nil, nil, map[int]string{0: "t"}, downwardOf(pod), fsUserOf(pod)))
			want := file("token", []byte("t"), tc.want)
			want.FSUser = tc.user
			checkPayload(t, got, err, plugin.Payload{"token": want}, "")
		})
	}
}

func checkPayload(t *testing.T, got plugin.Payload, err error, want plugin.Payload, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("err = %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}
