package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's headless-capable browser, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install -y chromium): the HTML timeline is not rendered in a real browser")
	return ""
}

// The timeline renders in real headless Chromium: its script draws a lane
// per pod and container (the DOM after scripts ran holds the SVG lanes).
func TestTimelineRendersInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "t.html")
	if out, err := lockstep(t, "sim", "run", "--scenario", "termination", "--seed", "4", "--steps", "5", "--html", page); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+page)
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	lanes := strings.Count(string(dom), `class="lane"`)
	if lanes < 4 || !strings.Contains(string(dom), `id="timeline"`) || !strings.Contains(string(dom), "<rect") {
		t.Errorf("chromium drew %d lanes (want a lane per pod and container, at least 4):\n%.2000s", lanes, dom)
	}
	if !strings.Contains(string(dom), `data-lane="default/p`) {
		t.Errorf("no container lane of the scenario's pods in the DOM")
	}
}
