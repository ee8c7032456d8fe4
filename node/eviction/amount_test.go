package eviction

import "testing"

// TestPercentageAmountAsTheKubelet: a percentage threshold's amount is
// the kubelet's (GetThresholdQuantity over a float32 percentage), 403
// bytes above a tenth for nodefs.available<10% of 270553174016 bytes, so
// that allocatable ephemeral-storage is the kubelet's to the byte.
func TestPercentageAmountAsTheKubelet(t *testing.T) {
	v, err := parseValue("10%")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.Amount(270553174016), int64(27055317804); got != want {
		t.Errorf("10%% of 270553174016 = %d, want the kubelet's %d", got, want)
	}
}
