package harness

import (
	"context"
	"fmt"
	"maps"

	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// manifestServer is the scripted HTTP server of --manifest-url: it answers
// every GET with the status and body last set (404 and nothing at first),
// or with a connection error, and remembers the requests.
type manifestServer struct {
	k        *kernel.Kernel
	status   int
	body     []byte
	down     bool
	requests []ManifestRequest
}

// ManifestRequest is one GET the agent made to the manifest server.
type ManifestRequest struct {
	URL    string
	Header map[string][]string
}

func newManifestServer(k *kernel.Kernel) *manifestServer {
	return &manifestServer{k: k, status: 404}
}

func (s *manifestServer) Get(ctx context.Context, url string, header map[string][]string) ([]byte, error) {
	s.k.Tasks().Yield()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := map[string][]string{}
	for k, v := range header {
		h[k] = append([]string(nil), v...)
	}
	s.requests = append(s.requests, ManifestRequest{URL: url, Header: h})
	if s.down {
		return nil, fmt.Errorf("GET %s: dial tcp: connection refused", url)
	}
	if s.status != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", url, s.status, statusText(s.status))
	}
	return append([]byte(nil), s.body...), nil
}

func statusText(code int) string {
	switch code {
	case 404:
		return "Not Found"
	case 500:
		return "Internal Server Error"
	case 503:
		return "Service Unavailable"
	}
	return ""
}

// ServeManifest makes the manifest server answer status with body.
func (h *Harness) ServeManifest(status int, body []byte) {
	h.manifests.status, h.manifests.body, h.manifests.down = status, append([]byte(nil), body...), false
}

// ManifestServerDown makes the manifest server unreachable (down) or back.
func (h *Harness) ManifestServerDown(down bool) { h.manifests.down = down }

// ManifestRequests are the GETs the agents made so far.
func (h *Harness) ManifestRequests() []ManifestRequest {
	out := make([]ManifestRequest, len(h.manifests.requests))
	for i, r := range h.manifests.requests {
		out[i] = ManifestRequest{URL: r.URL, Header: maps.Clone(r.Header)}
	}
	return out
}
