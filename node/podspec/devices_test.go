package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func TestAddDevices(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{Envs: []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}}}
	AddDevices(cfg, nil)
	AddDevices(cfg, &deps.DeviceAllocation{
		Envs:        map[string]string{"Z": "z", "FOO_DEVICE": "foo-0,foo-1"},
		Mounts:      []deps.DeviceMount{{ContainerPath: "/dev/foo", HostPath: "/var/lib/foo", ReadOnly: true}},
		Devices:     []deps.DeviceSpec{{ContainerPath: "/dev/foo0", HostPath: "/dev/foo0", Permissions: "rw"}},
		Annotations: map[string]string{"example.com/foo": "on"},
		CDIDevices:  []string{"example.com/foo=foo-0"},
	})
	want := &runtimeapi.ContainerConfig{
		Envs:        []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}, {Key: "FOO_DEVICE", Value: []byte("foo-0,foo-1")}, {Key: "Z", Value: []byte("z")}},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/dev/foo", HostPath: "/var/lib/foo", Readonly: true}},
		Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/foo0", HostPath: "/dev/foo0", Permissions: "rw"}},
		Annotations: map[string]string{"example.com/foo": "on"},
		CDIDevices:  []*runtimeapi.CDIDevice{{Name: "example.com/foo=foo-0"}},
	}
	if diff := cmp.Diff(want, cfg, protocmp.Transform()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
