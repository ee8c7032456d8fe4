package deviceplugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

func TestEnvName(t *testing.T) {
	for res, want := range map[string]string{"example.com/foo": "FOO_DEVICE", "vendor.io/gpu-x.1": "GPU_X_1_DEVICE"} {
		if got := deviceplugin.EnvName(res); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", res, got, want)
		}
	}
}

func TestPluginAnswers(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	p := deviceplugin.New(deviceplugin.Config{Resource: "example.com/foo", Count: 3}, k.NewSignal)
	ctx := context.Background()
	pref, err := p.GetPreferredAllocation(ctx, []string{"foo-0", "foo-1", "foo-2"}, []string{"foo-0"}, 2)
	if err != nil || !cmp.Equal(pref, []string{"foo-0", "foo-2"}) {
		t.Errorf("GetPreferredAllocation = %v, %v; want [foo-0 foo-2]", pref, err)
	}
	if _, err := p.Allocate(ctx, []string{"bar-0"}); err == nil {
		t.Error("Allocate of an unknown device succeeded")
	}
	a, err := p.Allocate(ctx, []string{"foo-1", "foo-2"})
	want := deps.DeviceAllocation{Envs: map[string]string{"FOO_DEVICE": "foo-1,foo-2"},
		Mounts: []deps.DeviceMount{{ContainerPath: "/dev/foo", HostPath: "/var/lib/lockstep-deviceplugin/foo", ReadOnly: true}}}
	if diff := cmp.Diff(want, a); err != nil || diff != "" {
		t.Errorf("Allocate = %v (-want +got):\n%s", err, diff)
	}
}

func TestListAndWatchFollowsHealthAndDeath(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	p := deviceplugin.New(deviceplugin.Config{Resource: "example.com/foo", Count: 2}, k.NewSignal)
	var got [][]deps.Device
	var end error
	k.Tasks().Go("watch", func() {
		end = p.ListAndWatch(context.Background(), func(d []deps.Device) { got = append(got, d) })
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	p.SetHealthy("foo-1", false)
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	p.Die()
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	want := [][]deps.Device{{{ID: "foo-0", Healthy: true}, {ID: "foo-1", Healthy: true}}, {{ID: "foo-0", Healthy: true}, {ID: "foo-1", Healthy: false}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device lists (-want +got):\n%s", diff)
	}
	if !errors.Is(end, deviceplugin.ErrDied) {
		t.Errorf("ListAndWatch ended with %v, want ErrDied", end)
	}
}

// TestFaultsAndTruth: FailOptions, FailListAndWatch (at once and after
// listing) and Die each leave the plugin down, with the calls it got
// recorded; a stream that lists brings it up again.
func TestFaultsAndTruth(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	ctx := context.Background()
	p := deviceplugin.New(deviceplugin.Config{Resource: "example.com/foo", Count: 2, FailOptions: true}, k.NewSignal)
	if _, err := p.GetDevicePluginOptions(ctx); !errors.Is(err, deviceplugin.ErrOptions) {
		t.Fatalf("GetDevicePluginOptions = %v, want ErrOptions", err)
	}
	want := deviceplugin.State{Down: true, Epoch: 1, Devices: 2}
	if diff := cmp.Diff(want, p.State()); diff != "" {
		t.Fatalf("after the options failed (-want +got):\n%s", diff)
	}
	p.FailOptions(false)
	p.FailListAndWatch(true)
	if _, err := p.GetDevicePluginOptions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.ListAndWatch(ctx, func([]deps.Device) { t.Error("a failing ListAndWatch listed") }); !errors.Is(err, deviceplugin.ErrListAndWatch) {
		t.Fatalf("ListAndWatch = %v, want ErrListAndWatch", err)
	}
	p.FailListAndWatch(false)
	var end error
	k.Tasks().Go("watch", func() { end = p.ListAndWatch(ctx, func([]deps.Device) {}) })
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	// Two lists: the signal latched the notice of the earlier fault.
	want = deviceplugin.State{Down: false, Epoch: 1, Stops: 1, Lists: 2, OptionsOK: 1, Devices: 2}
	if diff := cmp.Diff(want, p.State()); diff != "" {
		t.Fatalf("listing (-want +got):\n%s", diff)
	}
	p.FailListAndWatch(true)
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(end, deviceplugin.ErrListAndWatch) {
		t.Errorf("the stream ended with %v, want ErrListAndWatch", end)
	}
	want = deviceplugin.State{Down: true, Epoch: 2, Stops: 2, Lists: 2, OptionsOK: 1, Devices: 2}
	if diff := cmp.Diff(want, p.State()); diff != "" {
		t.Errorf("after the stream failed (-want +got):\n%s", diff)
	}
	if _, err := p.Allocate(ctx, []string{"foo-0"}); err != nil {
		t.Fatal(err)
	}
	wantCalls := []deviceplugin.Call{
		{Method: "GetDevicePluginOptions", Err: "GetDevicePluginOptions failed"},
		{Method: "GetDevicePluginOptions", Down: true, Epoch: 1},
		{Method: "ListAndWatch", Down: true, Epoch: 1, Err: "ListAndWatch failed"},
		{Method: "ListAndWatch", Down: true, Epoch: 1},
		{Method: "Allocate", Down: true, Epoch: 2},
	}
	if diff := cmp.Diff(wantCalls, p.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if !p.Heal() || p.Dead() {
		t.Error("Heal of a down plugin did not say so")
	}
}
