// Package e2e holds the end-to-end tests of lockstep against real
// components: containerd (CRI), kube-apiserver and etcd. The tests live in
// files behind the build tag `e2e`, so `go test ./...` never compiles them and
// `go test ./e2e/` without the tag reports "no test files".
//
// Run them with `make e2e` (as root), which builds lockstep, starts the
// components through hack/e2e/run.sh, runs
//
//	go test -tags e2e -count=1 -v ./e2e/
//
// with LOCKSTEP_E2E_DIR, LOCKSTEP_E2E_NODE and LOCKSTEP_E2E_PORT set, and tears
// everything down afterwards. See hack/e2e/README.md.
package e2e
