package deviceplugin_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/deviceplugin"
	"github.com/lockstep-dev/lockstep/node/real/world"
	sample "github.com/lockstep-dev/lockstep/sim/deviceplugin"
)

// next waits for the next registration, failing after 10 s.
func next(t *testing.T, r *deviceplugin.Registry) (deps.DeviceRegistration, deps.DevicePlugin, func(error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, p, answer, err := r.Next(ctx)
	if err != nil {
		t.Fatalf("no registration: %v", err)
	}
	return req, p, answer
}

// scratch is a short socket directory (removed at the end) and a context
// cancelled at the end of the test.
func scratch(t *testing.T) (string, context.Context) {
	t.Helper()
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return dir, ctx
}

// TestRegisterListAllocateReregister: the sample plugin served over gRPC
// registers on kubelet.sock, streams its devices, answers Allocate, and
// registers again when the agent's socket is recreated.
func TestRegisterListAllocateReregister(t *testing.T) {
	dir, ctx := scratch(t)

	regCtx, stopReg := context.WithCancel(ctx)
	reg := deviceplugin.NewRegistry(dir)
	regDone := make(chan error, 1)
	go func() { regDone <- reg.Serve(regCtx) }()

	plugin := sample.New(sample.Config{Resource: "example.com/foo", Count: 2, HostDir: "/tmp/foo"}, world.Tasks{}.NewSignal)
	go deviceplugin.Serve(ctx, deviceplugin.ServeConfig{Dir: dir, Endpoint: "foo.sock", Registration: plugin.Registration(), Plugin: plugin, Poll: 20 * time.Millisecond})

	req, client, answer := next(t, reg)
	if diff := cmp.Diff(plugin.Registration(), req); diff != "" {
		t.Fatalf("registration (-want +got):\n%s", diff)
	}
	answer(nil)

	var mu sync.Mutex
	var lists [][]deps.Device
	got := make(chan struct{}, 10)
	go client.ListAndWatch(ctx, func(d []deps.Device) {
		mu.Lock()
		lists = append(lists, d)
		mu.Unlock()
		got <- struct{}{}
	})
	<-got
	plugin.SetHealthy("foo-1", false)
	<-got
	mu.Lock()
	want := [][]deps.Device{{{ID: "foo-0", Healthy: true}, {ID: "foo-1", Healthy: true}}, {{ID: "foo-0", Healthy: true}, {ID: "foo-1", Healthy: false}}}
	if diff := cmp.Diff(want, lists); diff != "" {
		t.Errorf("device lists (-want +got):\n%s", diff)
	}
	mu.Unlock()

	a, err := client.Allocate(ctx, []string{"foo-0"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sample.Answer(sample.Config{Resource: "example.com/foo", HostDir: "/tmp/foo"}, []string{"foo-0"}), a); diff != "" {
		t.Errorf("allocation (-want +got):\n%s", diff)
	}

	// The agent restarts: a new registration socket; the plugin registers
	// again.
	stopReg()
	if err := <-regDone; err != nil { // the old socket is closed and gone
		t.Fatalf("registry: %v", err)
	}
	reg2 := deviceplugin.NewRegistry(dir)
	go reg2.Serve(ctx)
	req2, _, answer2 := next(t, reg2)
	answer2(nil)
	if req2.ResourceName != "example.com/foo" {
		t.Errorf("re-registration for %q", req2.ResourceName)
	}
}

// TestOptionsOverGRPC: the client asks the served plugin for its
// options; a plugin whose GetDevicePluginOptions fails reaches the agent
// with its error, and the agent's refusal reaches the plugin's Register
// call (which Serve retries).
func TestOptionsOverGRPC(t *testing.T) {
	dir, ctx := scratch(t)
	reg := deviceplugin.NewRegistry(dir)
	go reg.Serve(ctx)
	plugin := sample.New(sample.Config{Resource: "example.com/foo", Count: 1, PreStart: true, FailOptions: true}, world.Tasks{}.NewSignal)
	go deviceplugin.Serve(ctx, deviceplugin.ServeConfig{Dir: dir, Endpoint: "foo.sock", Registration: plugin.Registration(), Plugin: plugin, Poll: 20 * time.Millisecond})

	_, client, answer := next(t, reg)
	_, err := client.GetDevicePluginOptions(ctx)
	if err == nil || !strings.Contains(err.Error(), sample.ErrOptions.Error()) {
		t.Fatalf("GetDevicePluginOptions = %v, want the plugin's %v", err, sample.ErrOptions)
	}
	answer(fmt.Errorf("failed to get device plugin options: %w", err))
	plugin.FailOptions(false)
	_, client, answer = next(t, reg) // Serve registers again
	got, err := client.GetDevicePluginOptions(ctx)
	if err != nil || !got.PreStartRequired {
		t.Errorf("GetDevicePluginOptions = %+v, %v; want PreStartRequired", got, err)
	}
	answer(nil)
}
