package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// driverRuntime answers RuntimeConfig only.
type driverRuntime struct {
	cri.RuntimeService
	resp *runtimeapi.RuntimeConfigResponse
	err  error
}

func (r driverRuntime) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return r.resp, r.err
}

func TestCheckCgroupDriver(t *testing.T) {
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	o := Defaults()
	for _, tc := range []struct {
		name string
		rt   driverRuntime
		err  string
	}{
		{"same driver", driverRuntime{resp: linux(runtimeapi.CgroupDriver_CGROUPFS)}, ""},
		{"runtime on systemd", driverRuntime{resp: linux(runtimeapi.CgroupDriver_SYSTEMD)},
			"cgroup driver mismatch: default cgroup-driver=cgroupfs but the container runtime uses systemd"},
		{"runtime that does not say", driverRuntime{resp: &runtimeapi.RuntimeConfigResponse{}}, ""},
		{"runtime without RuntimeConfig", driverRuntime{err: errors.New("unimplemented")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCgroupDriver(context.Background(), tc.rt, o)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("checkCgroupDriver = %v, want %q", err, tc.err)
			}
		})
	}
	off := Defaults()
	off.Cgroups.CgroupsPerQOS = false
	if err := checkCgroupDriver(context.Background(), driverRuntime{resp: linux(runtimeapi.CgroupDriver_SYSTEMD)}, off); err != nil {
		t.Errorf("with --cgroups-per-qos=false the driver is not checked, got %v", err)
	}
}
