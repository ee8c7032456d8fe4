//go:build tools

// Package tools pins the control-plane binaries the e2e suite builds:
// kube-apiserver from k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3.
// It is a separate module so none of this reaches the project's go.mod.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
