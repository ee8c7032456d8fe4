// Package logind is the real deps.ShutdownNotifier: systemd-logind over
// D-Bus. It takes a "delay" inhibitor lock on shutdown, which logind
// honours for at most its InhibitDelayMaxSec, and turns the
// PrepareForShutdown signal into shutdown announcements. On a machine
// whose PID 1 is not systemd (no /run/systemd/system) or without logind it
// refuses, and the agent logs that graceful node shutdown is inactive, as
// the kubelet does.
package logind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/lockstep-dev/lockstep/node/deps"
)

const (
	service   = "org.freedesktop.login1"
	object    = dbus.ObjectPath("/org/freedesktop/login1")
	manager   = "org.freedesktop.login1.Manager"
	signal    = "PrepareForShutdown"
	booted    = "/run/systemd/system"
	inhibitBy = "lockstep"
	why       = "lockstep (the node agent) needs time to stop its pods before the node shuts down"
)

// Notifier talks to logind; create it with New.
type Notifier struct {
	mu      sync.Mutex
	conn    *dbus.Conn
	lock    *os.File
	signals chan *dbus.Signal
}

var _ deps.ShutdownNotifier = (*Notifier)(nil)

// New returns a notifier; nothing is dialled until Inhibit.
func New() *Notifier { return &Notifier{} }

// Booted reports whether systemd is the init system (sd_booted).
func Booted() bool {
	fi, err := os.Lstat(booted)
	return err == nil && fi.IsDir()
}

// Inhibit connects to logind (first time), checks that it allows a delay
// of d, takes the delay lock and subscribes to PrepareForShutdown.
func (n *Notifier) Inhibit(ctx context.Context, d time.Duration) error {
	if !Booted() {
		return fmt.Errorf("systemd is not the init system (no %s): no logind to delay the shutdown", booted)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn == nil {
		conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("connect to the system D-Bus: %w", err)
		}
		if err := conn.AddMatchSignal(dbus.WithMatchInterface(manager), dbus.WithMatchMember(signal), dbus.WithMatchObjectPath(object)); err != nil {
			conn.Close()
			return fmt.Errorf("subscribe to logind's %s: %w", signal, err)
		}
		n.signals = make(chan *dbus.Signal, 8)
		conn.Signal(n.signals)
		n.conn = conn
	}
	obj := n.conn.Object(service, object)
	v, err := obj.GetProperty(manager + ".InhibitDelayMaxUSec")
	if err != nil {
		return fmt.Errorf("read logind's InhibitDelayMaxUSec: %w", err)
	}
	if usec, ok := v.Value().(uint64); ok && time.Duration(usec)*time.Microsecond < d {
		return fmt.Errorf("logind's InhibitDelayMaxSec is %v, less than the shutdown grace period %v: raise it in /etc/systemd/logind.conf.d/ and restart systemd-logind",
			time.Duration(usec)*time.Microsecond, d)
	}
	var fd dbus.UnixFD
	if err := obj.CallWithContext(ctx, manager+".Inhibit", 0, "shutdown", inhibitBy, why, "delay").Store(&fd); err != nil {
		return fmt.Errorf("take logind's shutdown delay lock: %w", err)
	}
	n.lock = os.NewFile(uintptr(fd), "logind-inhibit")
	return nil
}

// Next waits for PrepareForShutdown: true when a shutdown starts, false
// when it is cancelled.
func (n *Notifier) Next(ctx context.Context) (bool, error) {
	n.mu.Lock()
	ch := n.signals
	n.mu.Unlock()
	if ch == nil {
		return false, errors.New("logind: not connected (Inhibit first)")
	}
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case s, ok := <-ch:
			if !ok {
				return false, errors.New("logind: D-Bus connection closed")
			}
			if s.Name != manager+"."+signal || len(s.Body) == 0 {
				continue
			}
			if v, ok := s.Body[0].(bool); ok {
				return v, nil
			}
		}
	}
}

// Release closes the lock's file descriptor: logind lets the shutdown go
// on.
func (n *Notifier) Release() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lock == nil {
		return nil
	}
	err := n.lock.Close()
	n.lock = nil
	return err
}
