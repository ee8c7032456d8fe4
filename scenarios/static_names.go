package scenarios

import "fmt"

// staticNames are the static pods the scenarios write manifests for.
var staticNames = []string{"etcd", "apiserver"}

// propManifest is version v of a hostNetwork static pod whose container
// ignores SIGTERM, so that versions overlap unless the agent serialises
// them: etcd with 3 s of grace, apiserver with 25 s (longer than the
// manifest directory's 20 s poll, so a removal and a re-add can both be
// seen while it terminates).
func propManifest(name string, v int) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: kube-system
  annotations: {lockstep.test/version: "%d"}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    env:
    - {name: FAKECRI_IGNORE_SIGTERM, value: "true"}
    - {name: VERSION, value: "%d"}
`, name, v, staticGrace(name), v)
}

// staticGrace is the grace period of a static pod of the scenarios.
func staticGrace(name string) int {
	if name == "apiserver" {
		return 25
	}
	return 3
}
