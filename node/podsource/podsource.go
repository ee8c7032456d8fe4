// Package podsource turns the places desired pods come from (the apiserver,
// the static manifest directory) into ordered ADD / UPDATE / DELETE / REMOVE
// / RECONCILE operations for the agent's sync loop.
//
// Each source delivers complete snapshots (a list, a directory scan) and, for
// the apiserver, single watch events; a Merger keeps each source's pods by
// UID, diffs what it is given against what it had, and puts the resulting
// Updates on an inbox. The sources are blocking loops the caller starts as
// tasks; they reach the world only through deps.
package podsource

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Op is the kind of change an Update carries.
type Op string

// The operations a Merger emits.
const (
	// OpAdd: a pod the source did not have before.
	OpAdd Op = "ADD"
	// OpUpdate: a known pod whose spec, labels, annotations or deletion
	// fields changed (other than a deletion requested, see OpDelete).
	OpUpdate Op = "UPDATE"
	// OpDelete: graceful deletion was requested (DeletionTimestamp newly
	// set) or requested again with a shorter grace period
	// (DeletionGracePeriodSeconds shrank); the pod must be stopped within
	// its DeletionGracePeriodSeconds.
	OpDelete Op = "DELETE"
	// OpRemove: the pod is gone from its source (deleted from the API, its
	// manifest removed or edited).
	OpRemove Op = "REMOVE"
	// OpReconcile: only the pod's status changed; the agent may need to
	// reconcile its status cache.
	OpReconcile Op = "RECONCILE"
)

// The source names.
const (
	// SourceAPI names the pods bound to this node in the apiserver.
	SourceAPI = podutil.SourceAPI
	// SourceFile names the static pods of the manifest directory.
	SourceFile = "file"
	// SourceHTTP names the static pods of the manifest URL.
	SourceHTTP = "http"
)

// The annotations the agent reads and writes on pods to tell where they
// come from. They are the upstream kubelet's keys; podutil owns those it
// shares with other packages.
const (
	// AnnotationConfigSource holds the source a pod came from ("api",
	// "file"). The Merger sets it on every pod it hands out.
	AnnotationConfigSource = podutil.AnnotationConfigSource
	// AnnotationConfigHash holds a static pod's UID, the hash of its
	// manifest.
	AnnotationConfigHash = podutil.AnnotationConfigHash
	// AnnotationConfigSeen holds when the agent first saw a static pod's
	// manifest (RFC 3339 with nanoseconds). It is ignored when pods are
	// compared.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
	// AnnotationConfigMirror marks a mirror pod; its value is the config
	// hash (UID) of the static pod it mirrors.
	AnnotationConfigMirror = podutil.AnnotationConfigMirror
)

// Update is one batch of changes of one kind from one source, in namespace,
// name order. The pods are the receiver's own copies.
type Update struct {
	Op     Op
	Source string
	Pods   []*corev1.Pod
}
