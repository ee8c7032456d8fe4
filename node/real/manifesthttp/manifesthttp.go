// Package manifesthttp is the real deps.ManifestHTTP: plain net/http GETs
// of the --manifest-url static pod source, with the configured headers.
package manifesthttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// maxBody bounds a manifest body (10 MiB).
const maxBody = 10 << 20

// Client fetches manifests.
type Client struct{ c *http.Client }

var _ deps.ManifestHTTP = Client{}

// New returns a client whose requests time out after timeout (the context
// may end them sooner).
func New(timeout time.Duration) Client {
	return Client{c: &http.Client{Timeout: timeout}}
}

// Get fetches url with header; a non-200 answer is an error naming its
// status.
func (c Client) Get(ctx context.Context, url string, header map[string][]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: read body: %w", url, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("GET %s: body larger than %d bytes", url, maxBody)
	}
	return body, nil
}
