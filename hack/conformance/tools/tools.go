//go:build tools

// Package tools pins what `make conformance` and `make node-conformance`
// build beside the e2e control plane: the upstream e2e suite (test/e2e) and
// the node suite (test/e2e_node), both built with `go test -c`, the
// controller manager and scheduler the suites' pods need, and agnhost, the
// suites' workhorse image. The blank imports of the suites' test sources let
// `go mod tidy` record their dependencies (tests of dependencies are not
// tidied otherwise). It is a separate module so none of this reaches the
// project's go.mod.
package tools

import (
	_ "github.com/coreos/go-systemd/v22/util"
	_ "github.com/onsi/ginkgo/v2"
	_ "go.yaml.in/yaml/v2"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/test/conformance/testdata"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/architecture"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/autoscaling"
	_ "k8s.io/kubernetes/test/e2e/common"
	_ "k8s.io/kubernetes/test/e2e/dra"
	_ "k8s.io/kubernetes/test/e2e/feature"
	_ "k8s.io/kubernetes/test/e2e/framework"
	_ "k8s.io/kubernetes/test/e2e/framework/config"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/e2e/framework/testfiles"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/invariants"
	_ "k8s.io/kubernetes/test/e2e/invariants/logcheck"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"
	_ "k8s.io/kubernetes/test/e2e/storage/csimock"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	_ "k8s.io/kubernetes/test/e2e/testing-manifests"
	_ "k8s.io/kubernetes/test/e2e/windows"
	_ "k8s.io/kubernetes/test/e2e_node"
	_ "k8s.io/kubernetes/test/e2e_node/mounter"
	_ "k8s.io/kubernetes/test/e2e_node/perf/workloads"
	_ "k8s.io/kubernetes/test/e2e_node/plugins/gcp-credential-provider/pkg"
	_ "k8s.io/kubernetes/test/e2e_node/runner/node"
	_ "k8s.io/kubernetes/test/e2e_node/services"
	_ "k8s.io/kubernetes/test/e2e_node/testdeviceplugin"
	_ "k8s.io/kubernetes/test/e2e_node/testing-manifests"
	_ "k8s.io/kubernetes/test/fixtures"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
	_ "k8s.io/system-validators/validators"
)
