package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStaticAndMirrorPredicates(t *testing.T) {
	tests := []struct {
		name           string
		annotations    map[string]string
		static, mirror bool
	}{
		{"no annotations", nil, false, false},
		{"from the API", map[string]string{AnnotationConfigSource: SourceAPI}, false, false},
		{"from a manifest file", map[string]string{AnnotationConfigSource: "file"}, true, false},
		{"from a manifest URL", map[string]string{AnnotationConfigSource: "http"}, true, false},
		{"mirror read from the API", map[string]string{AnnotationConfigSource: SourceAPI, AnnotationConfigMirror: "uid-1"}, false, true},
		{"mirror not yet stamped", map[string]string{AnnotationConfigSource: "file", AnnotationConfigMirror: "uid-1"}, true, true},
		{"empty mirror hash", map[string]string{AnnotationConfigMirror: ""}, false, true},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: tt.annotations}}
		if got := IsStaticPod(pod); got != tt.static {
			t.Errorf("%s: IsStaticPod = %v, want %v", tt.name, got, tt.static)
		}
		if got := IsMirrorPod(pod); got != tt.mirror {
			t.Errorf("%s: IsMirrorPod = %v, want %v", tt.name, got, tt.mirror)
		}
	}
}
