package podsource

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// ParseManifest reads one static pod manifest (YAML or JSON; unknown
// fields are errors), validates it and returns the pod the agent runs for
// it on nodeName:
//
//   - UID: a 32-hex-digit hash of the parsed manifest and the node name, so
//     an edit makes a new pod while reformatting or comments do not (a UID
//     in the manifest is part of the hash, never used as is);
//   - name: the manifest's name followed by "-<nodeName>"; namespace
//     "default" when none is given; spec.nodeName set to the node;
//   - annotations: config.source "file", config.hash (the UID) and
//     config.seen (seen, RFC 3339 with nanoseconds);
//   - defaults: restartPolicy Always, dnsPolicy ClusterFirst,
//     terminationGracePeriodSeconds 30 and each container's
//     imagePullPolicy (Always for an untagged or ":latest" image, else
//     IfNotPresent).
func ParseManifest(data []byte, nodeName string, seen time.Time) (*corev1.Pod, error) {
	return parseStatic(data, nodeName, seen, SourceFile)
}

// parseStatic is ParseManifest for a pod of source (SourceFile,
// SourceHTTP); the UID of a pod not from a file also hashes its source, so
// the same manifest served over HTTP and in the directory are two pods.
func parseStatic(data []byte, nodeName string, seen time.Time, source string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, fmt.Errorf("parse pod manifest: %w", err)
	}
	if err := validateManifest(pod); err != nil {
		return nil, err
	}
	uid, err := manifestUID(pod, nodeName, source)
	if err != nil {
		return nil, err
	}
	applyStaticDefaults(pod, nodeName, uid, seen)
	pod.Annotations[AnnotationConfigSource] = source
	return pod, nil
}

// validateManifest checks what a static pod needs to be run at all.
func validateManifest(pod *corev1.Pod) error {
	var problems []string
	if pod.Kind != "Pod" {
		problems = append(problems, fmt.Sprintf("kind is %q, want \"Pod\"", pod.Kind))
	}
	if pod.APIVersion != "v1" {
		problems = append(problems, fmt.Sprintf("apiVersion is %q, want \"v1\"", pod.APIVersion))
	}
	if pod.Name == "" {
		problems = append(problems, "metadata.name is required")
	}
	if len(pod.Spec.Containers) == 0 {
		problems = append(problems, "spec.containers: at least one container is required")
	}
	names := map[string]bool{}
	check := func(field string, cs []corev1.Container) {
		for i, c := range cs {
			at := fmt.Sprintf("%s[%d]", field, i)
			if c.Name == "" {
				problems = append(problems, at+".name is required")
			} else if names[c.Name] {
				problems = append(problems, fmt.Sprintf("%s.name: duplicate container name %q", at, c.Name))
			}
			names[c.Name] = true
			if c.Image == "" {
				problems = append(problems, at+".image is required")
			}
		}
	}
	check("spec.initContainers", pod.Spec.InitContainers)
	check("spec.containers", pod.Spec.Containers)
	if len(problems) > 0 {
		return errors.New("invalid pod manifest: " + strings.Join(problems, "; "))
	}
	return nil
}

// manifestUID hashes the canonical JSON form of the parsed manifest with
// the node name.
func manifestUID(pod *corev1.Pod, nodeName, source string) (types.UID, error) {
	canon, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("hash pod manifest %q: %w", pod.Name, err)
	}
	h := sha256.New()
	h.Write(canon)
	h.Write([]byte{0})
	h.Write([]byte(nodeName))
	if source != SourceFile {
		h.Write([]byte{0})
		h.Write([]byte(source))
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16])), nil
}

// applyStaticDefaults makes a parsed manifest the pod the agent runs.
func applyStaticDefaults(pod *corev1.Pod, nodeName string, uid types.UID, seen time.Time) {
	pod.UID = uid
	pod.Name = pod.Name + "-" + nodeName
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigSource] = SourceFile
	pod.Annotations[AnnotationConfigHash] = string(uid)
	pod.Annotations[AnnotationConfigSeen] = seen.Format(time.RFC3339Nano)
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if pod.Spec.DNSPolicy == "" {
		pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		grace := podutil.DefaultGracePeriodSeconds
		pod.Spec.TerminationGracePeriodSeconds = &grace
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].ImagePullPolicy == "" {
				cs[i].ImagePullPolicy = podutil.DefaultPullPolicy(cs[i].Image)
			}
		}
	}
}

// MirrorPodFor returns the mirror pod to create in the API for a static
// pod: same name, namespace, labels, annotations and spec, plus the mirror
// annotation holding the static pod's config hash and its config source
// (file or http); no UID, resource
// version or status. Owner references (the Node) are the caller's to add.
func MirrorPodFor(static *corev1.Pod) *corev1.Pod {
	hash := static.Annotations[AnnotationConfigHash]
	if hash == "" {
		hash = string(static.UID)
	}
	mirror := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: maps.Clone(static.Annotations),
		},
		Spec: *static.Spec.DeepCopy(),
	}
	if mirror.Annotations == nil {
		mirror.Annotations = map[string]string{}
	}
	if mirror.Annotations[AnnotationConfigSource] == "" {
		mirror.Annotations[AnnotationConfigSource] = SourceFile
	}
	mirror.Annotations[AnnotationConfigMirror] = hash
	return mirror
}

// StaticPodUIDFromMirror returns the UID of the static pod a mirror pod
// mirrors, and false when pod is not a mirror pod.
func StaticPodUIDFromMirror(pod *corev1.Pod) (types.UID, bool) {
	hash, ok := pod.Annotations[AnnotationConfigMirror]
	if !ok || hash == "" {
		return "", false
	}
	return types.UID(hash), true
}
