//go:build regress_teeth_features

package scenarios

import "testing"

// TestRegressionTeethFeatures: with admission ignoring the node features
// a pod needs (regress_teeth_features), a pod with a RestartAllContainers
// restart rule runs on a node that does not declare the feature; the
// static-pods sweep must find it through features-declared — which judges
// from the pod spec (its own model) and the runtime's containers.
func TestRegressionTeethFeatures(t *testing.T) {
	testRegression(t, "static-pods", "features-declared", 200)
}
