package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGracePeriods(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name           string
		spec, deletion *int64
		wantSpec, want int64
	}{
		{"nothing set", nil, nil, 30, 30},
		{"spec only", i64(120), nil, 120, 120},
		{"spec zero", i64(0), nil, 0, 0},
		{"deletion wins over spec", i64(120), i64(5), 120, 5},
		{"deletion without spec", nil, i64(0), 30, 0},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionGracePeriodSeconds: tt.deletion},
			Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: tt.spec},
		}
		if got := SpecGracePeriod(pod); got != tt.wantSpec {
			t.Errorf("%s: SpecGracePeriod = %d, want %d", tt.name, got, tt.wantSpec)
		}
		if got := GracePeriod(pod); got != tt.want {
			t.Errorf("%s: GracePeriod = %d, want %d", tt.name, got, tt.want)
		}
	}
}
