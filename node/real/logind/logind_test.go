package logind

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestInhibitWithoutSystemd: on a machine whose init is not systemd the
// notifier refuses with a message naming why (graceful node shutdown is
// then inactive).
func TestInhibitWithoutSystemd(t *testing.T) {
	if Booted() {
		t.Skip("this machine runs systemd")
	}
	err := New().Inhibit(context.Background(), 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "systemd is not the init system") {
		t.Fatalf("Inhibit = %v, want an error saying systemd is not the init system", err)
	}
}
