package daemon

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestValidateNodeLabels(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		err    string // substring; "" means valid
	}{
		{map[string]string{"role": "db", "example.com/tier": "gold"}, ""},
		{map[string]string{"node.kubernetes.io/instance-type": "m5", "kubelet.kubernetes.io/x": "y", "topology.kubernetes.io/zone": "a"}, ""},
		{map[string]string{"node-role.kubernetes.io/worker": ""}, "unknown 'kubernetes.io' or 'k8s.io' labels [node-role.kubernetes.io/worker]"},
		{map[string]string{"kubernetes.io/hostname2": "x", "foo.k8s.io/bar": "y"}, "[foo.k8s.io/bar kubernetes.io/hostname2]"},
		{map[string]string{"bad key": "x"}, `invalid labels: key "bad key"`},
		{map[string]string{"k": "bad value!"}, `value "bad value!" of "k"`},
	} {
		err := ValidateNodeLabels(tc.labels)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ValidateNodeLabels(%v) = %v, want %q", tc.labels, err, tc.err)
		}
	}
}

func TestParseTaints(t *testing.T) {
	got, err := ParseTaints([]string{"dedicated=db:NoSchedule", "example.com/gpu:NoExecute", "soft=1:PreferNoSchedule"})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{
		{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute},
		{Key: "soft", Value: "1", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseTaints (-want +got):\n%s", d)
	}
	for _, tc := range []struct{ spec, err string }{
		{"nokey", "want <key>[=<value>]:<effect>"},
		{"k=v:Sometimes", `effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute`},
		{"bad key:NoSchedule", `key "bad key"`},
		{"a:b:NoSchedule", "want <key>[=<value>]:<effect>"},
	} {
		if _, err := ParseTaints([]string{tc.spec}); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseTaints(%q) = %v, want an error containing %q", tc.spec, err, tc.err)
		}
	}
	if _, err := ParseTaints([]string{"a:NoSchedule", "a=x:NoSchedule"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate taint: %v", err)
	}
}
