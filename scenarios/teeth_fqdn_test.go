//go:build regress_teeth_fqdn

package scenarios

import "testing"

// TestRegressionTeethFQDN: with the FQDN length limit ignored
// (regress_teeth_fqdn), a pod whose FQDN hostname is longer than 64 bytes
// gets a sandbox; the pod-refusals sweep must find it through
// fqdn-too-long — which computes the FQDN from the pod spec and the
// cluster domain (its own model) and reads the runtime's sandboxes and
// the events.
func TestRegressionTeethFQDN(t *testing.T) {
	testRegression(t, "pod-refusals", "fqdn-too-long", 200)
}
