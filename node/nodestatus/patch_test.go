package nodestatus

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestStatusPatch(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	v4 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}
	v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}
	for _, tc := range []struct {
		name      string
		old, next corev1.NodeStatus
		want      string
	}{
		{
			name: "conditions are always sent whole",
			old:  corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, Addresses: []corev1.NodeAddress{v4}},
			next: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, Addresses: []corev1.NodeAddress{v4}},
			want: `{"status":{"conditions":[{"lastHeartbeatTime":null,"lastTransitionTime":null,"reason":"KubeletReady","status":"True","type":"Ready"}]}}`,
		},
		{
			name: "a changed field only",
			old:  corev1.NodeStatus{Phase: corev1.NodePending, Addresses: []corev1.NodeAddress{v4}},
			next: corev1.NodeStatus{Phase: corev1.NodeRunning, Addresses: []corev1.NodeAddress{v4}},
			want: `{"status":{"phase":"Running"}}`,
		},
		{
			name: "changed addresses replace the list (two of one type)",
			old:  corev1.NodeStatus{Addresses: []corev1.NodeAddress{v4, host}},
			next: corev1.NodeStatus{Addresses: []corev1.NodeAddress{v4, v6, host}},
			want: `{"status":{"addresses":[{"$patch":"replace"},{"address":"10.0.0.1","type":"InternalIP"},` +
				`{"address":"fd00::1","type":"InternalIP"},{"address":"n1","type":"Hostname"}]}}`,
		},
		{
			name: "first addresses are merged in",
			old:  corev1.NodeStatus{},
			next: corev1.NodeStatus{Addresses: []corev1.NodeAddress{v4}},
			want: `{"status":{"addresses":[{"address":"10.0.0.1","type":"InternalIP"}]}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statusPatch("n1", tc.old, tc.next)
			if err != nil {
				t.Fatal(err)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("decode %s: %v", got, err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
