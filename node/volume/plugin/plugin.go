// Package plugin is the registry of the volume types the agent supports:
// one Plugin per type, one file per plugin (emptydir.go, hostpath.go,
// configmap.go, secret.go, downwardapi.go, projected.go, claim.go). A
// plugin says everything the rest of the agent needs to know about its
// type: whether it handles a volume (CanSupport), where the volume lives
// on the host and how containers mount it (Dir, ReadOnly), which parts of
// the volume the agent ignores (admission's warning), which configMaps
// and secrets it reads (their watches), how its usage is counted (stats
// and eviction), and how it is set up, checked from disk after a restart
// and torn down (the volume manager, node/volume, through a Host).
//
// For is the one place that maps a volume to its type; a volume no plugin
// supports is left out of the containers' mounts and named by admission.
// Adding a type is one file here and its tests: see docs/architecture.md,
// "Adding a volume type".
package plugin

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Plugin is one volume type. Its methods are pure but SetUp, IsSetUp and
// TearDown, which act on the host through h.
type Plugin interface {
	// Name is the type's directory below a pod's volumes directory, as
	// upstream spells it ("kubernetes.io~empty-dir").
	Name() string
	// CanSupport reports whether v is a volume of this type.
	CanSupport(v *corev1.Volume) bool
	// Dir is where v lives on the host, given the pod's volumes directory
	// (<root>/pods/<uid>/volumes): usually <volumesDir>/<Name>/<v.Name>.
	Dir(volumesDir string, v *corev1.Volume) string
	// ReadOnly reports whether every container mount of v is read-only,
	// whatever the volumeMount says.
	ReadOnly(v *corev1.Volume) bool
	// IgnoredFields names the fields of v the agent does not honour, as
	// paths below the volume ("emptyDir.medium"), for admission's warning.
	IgnoredFields(v *corev1.Volume) []string
	// References lists the configMaps and secrets v reads (they are
	// watched while a pod uses them).
	References(v *corev1.Volume) (configMaps, secrets []string)
	// Storage says how v's usage is measured and counted.
	Storage(v *corev1.Volume) Storage
	// ResolveOnce reports whether v is set up once per agent life (a
	// claim, as upstream's populator resolves it once) rather than set up
	// again every resync period and whenever an object it reads changes.
	ResolveOnce(v *corev1.Volume) bool
	// SetUp sets v of pod up (or refreshes it) at dir and reports whether
	// that changed what is on disk.
	SetUp(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) (bool, error)
	// IsSetUp reports, from the disk alone, whether v of pod is set up at
	// dir (so a restarted agent knows without memory).
	IsSetUp(h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) bool
	// TearDown undoes what SetUp did at dir that removing the pod's
	// directory would not (a mount), knowing only the directory: the pod
	// may be gone.
	TearDown(h *Host, dir string) error
}

// Storage is how a volume's disk usage is counted.
type Storage struct {
	// Measured: the stats sample measures the volume's directory.
	Measured bool
	// PodEphemeral: the summary API counts the volume in the pod's
	// ephemeral storage (upstream's IsLocalEphemeralVolume).
	PodEphemeral bool
	// EvictionLocal: the eviction manager counts the volume against the
	// pod's ephemeral-storage limit.
	EvictionLocal bool
	// SizeLimit, when set and positive, evicts the pod whose volume uses
	// more (an emptyDir's sizeLimit).
	SizeLimit *resource.Quantity
}

// Host is what plugins act on: the manager's ports and the pod-level
// facts that live elsewhere (downward API values, the pod's file user).
type Host struct {
	// Files holds the pods' volume directories.
	Files deps.Files
	// Mounts mounts tmpfs; nil: memory-backed volumes are plain
	// directories.
	Mounts deps.Mounter
	// Log logs what cannot fail a set-up.
	Log *slog.Logger
	// Now is the time (the published content's timestamp).
	Now func() time.Time
	// Objects reads configMaps and secrets; nil: none can be read.
	Objects Objects
	// Tokens issues the service account tokens of projected volumes.
	Tokens Tokens
	// Claims reads claims and PersistentVolumes; nil: none can be read.
	Claims deps.ClaimAPI
	// TrustBundles reads ClusterTrustBundles; nil: none can be read.
	TrustBundles deps.TrustBundleAPI
	// DownwardAPIValue is the value a downwardAPI item publishes for pod.
	DownwardAPIValue func(pod *corev1.Pod, item *corev1.DownwardAPIVolumeFile) (string, error)
	// FSUser is the user that owns a pod's projected tokens, if one.
	FSUser func(pod *corev1.Pod) (int64, bool)
}

// Objects reads the configMaps and secrets volumes publish; a missing
// object is (nil, nil).
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Tokens issues service account tokens (nil: none can be had).
type Tokens interface {
	Get(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// plugins are the supported types, in the order For tries them.
func plugins() []Plugin {
	return []Plugin{emptyDir{}, apiDataPlugin{configMap{}}, apiDataPlugin{secret{}}, apiDataPlugin{downwardAPI{}}, apiDataPlugin{projected{}}, hostPath{}, claim{}}
}

// All returns every plugin.
func All() []Plugin { return plugins() }

// For returns the plugin of v, false when the agent does not support v's
// type.
func For(v *corev1.Volume) (Plugin, bool) {
	for _, p := range plugins() {
		if p.CanSupport(v) {
			return p, true
		}
	}
	return nil, false
}

// References lists the configMaps and secrets v reads, sorted (none for
// an unsupported type).
func References(v *corev1.Volume) (configMaps, secrets []string) {
	p, ok := For(v)
	if !ok {
		return nil, nil
	}
	configMaps, secrets = p.References(v)
	slices.Sort(configMaps)
	slices.Sort(secrets)
	return slices.Compact(configMaps), slices.Compact(secrets)
}

// SourceField names the source field set in v ("nfs", "csi"), from the
// API type itself, or "" when none is.
func SourceField(v *corev1.Volume) string {
	s := reflect.ValueOf(v.VolumeSource)
	for i := range s.NumField() {
		f := s.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(s.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}

// inPodDir is the directory of a volume kept below the pod's volumes
// directory: <volumesDir>/<plugin>/<name>.
func inPodDir(volumesDir string, p Plugin, v *corev1.Volume) string {
	return filepath.Join(volumesDir, p.Name(), v.Name)
}

// noRefs is References of a type that reads no API object.
func noRefs() (configMaps, secrets []string) { return nil, nil }
