package podsource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// DefaultHTTPPeriod is how often the manifest URL is fetched when
// HTTPConfig.Period is zero (the kubelet's httpCheckFrequency).
const DefaultHTTPPeriod = 20 * time.Second

// HTTPConfig configures the HTTP static pod source (--manifest-url).
type HTTPConfig struct {
	// URL is fetched every Period.
	URL string
	// Header are the requests' headers (--manifest-url-header).
	Header map[string][]string
	// NodeName is this node's name.
	NodeName string
	// Period is the fetch interval; zero means DefaultHTTPPeriod.
	Period time.Duration
	// OnManifestError, when set, is told once about each distinct error
	// (unreachable, bad status, invalid manifests).
	OnManifestError func(url string, err error)
}

// HTTPSource polls a URL for static pod manifests: one pod manifest, a
// PodList (or List) of pods, or several YAML documents each holding
// either. Every successful fetch is a complete snapshot for the Merger.
// A fetch that fails, or a body of which any pod is invalid, keeps the
// pods of the last good one and is reported; an empty body means no pods.
type HTTPSource struct {
	d   deps.Core
	get deps.ManifestHTTP
	cfg HTTPConfig
	m   *Merger

	// sum is the digest of the last good body, pods what it gave.
	sum  [sha256.Size]byte
	good bool
	pods []*corev1.Pod
	// reported is the error last reported ("" after a good fetch);
	// delivered: the Merger has had a snapshot.
	reported  string
	delivered bool
}

// NewHTTPSource returns the HTTP static pod source feeding m.
func NewHTTPSource(d deps.Core, get deps.ManifestHTTP, cfg HTTPConfig, m *Merger) *HTTPSource {
	if cfg.Period <= 0 {
		cfg.Period = DefaultHTTPPeriod
	}
	return &HTTPSource{d: d, get: get, cfg: cfg, m: m}
}

// Run fetches at once and then every period until ctx ends.
func (s *HTTPSource) Run(ctx context.Context) {
	s.fetch(ctx)
	tick := s.d.Tasks.NewTicker("podsource-http-poll", s.cfg.Period)
	defer tick.Stop()
	for tick.Wait(ctx) == nil {
		s.fetch(ctx)
	}
}

// fetch gets the URL once and hands the Merger what it gives. Until a
// first good fetch the source counts as synced with no pods, so that a
// server down at start holds up nothing else.
func (s *HTTPSource) fetch(ctx context.Context) {
	cctx, cancel := s.d.Clock.WithTimeout(ctx, s.cfg.Period)
	body, err := s.get.Get(cctx, s.cfg.URL, s.cfg.Header)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.fail(fmt.Errorf("fetch static pod manifests from %s: %w", s.cfg.URL, err))
		return
	}
	sum := sha256.Sum256(body)
	if s.good && sum == s.sum {
		s.reported = ""
		return
	}
	pods, err := ParseManifests(body, s.cfg.NodeName, s.d.Clock.Now())
	if err != nil {
		s.fail(fmt.Errorf("static pod manifests from %s: %w", s.cfg.URL, err))
		return
	}
	s.sum, s.good, s.pods, s.reported, s.delivered = sum, true, pods, "", true
	s.d.Log.Info("static pod manifests fetched", "url", s.cfg.URL, "pods", len(pods))
	s.m.Set(SourceHTTP, pods)
}

// fail reports err (once while it lasts) and keeps the last good pods.
func (s *HTTPSource) fail(err error) {
	if !s.delivered {
		s.delivered = true
		s.m.Set(SourceHTTP, nil)
	}
	if msg := err.Error(); msg != s.reported {
		s.reported = msg
		s.d.Log.Warn("static pod manifests from the manifest URL unusable; keeping the last good ones", "url", s.cfg.URL, "pods", len(s.pods), "error", msg)
		if s.cfg.OnManifestError != nil {
			s.cfg.OnManifestError(s.cfg.URL, err)
		}
	}
}

// ParseManifests reads the pods of an HTTP manifest source's body: YAML
// or JSON documents, each one pod manifest or a PodList / List whose items
// are pods (an item's kind and apiVersion may be left out). Every pod is
// parsed as ParseManifest does, with config.source "http"; any invalid pod
// or two pods of one name fail the whole body.
func ParseManifests(body []byte, nodeName string, seen time.Time) ([]*corev1.Pod, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(body), 4096)
	var pods []*corev1.Pod
	names := map[string]bool{}
	for doc := 0; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		items, err := docPods(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		for i, item := range items {
			pod, err := parseStatic(item, nodeName, seen, SourceHTTP)
			if err != nil {
				return nil, fmt.Errorf("document %d, pod %d: %w", doc, i, err)
			}
			key := pod.Namespace + "/" + pod.Name
			if names[key] {
				return nil, fmt.Errorf("document %d, pod %d: pod %s is defined twice", doc, i, key)
			}
			names[key] = true
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// docPods splits one document into its pod manifests (itself, or a
// list's items with kind Pod and apiVersion v1 filled in).
func docPods(raw json.RawMessage) ([][]byte, error) {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	if head.Kind != "PodList" && head.Kind != "List" {
		return [][]byte{raw}, nil
	}
	out := make([][]byte, 0, len(head.Items))
	for _, item := range head.Items {
		var m map[string]any
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, fmt.Errorf("parse %s item: %w", head.Kind, err)
		}
		if _, ok := m["kind"]; !ok {
			m["kind"] = "Pod"
		}
		if _, ok := m["apiVersion"]; !ok {
			m["apiVersion"] = "v1"
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("parse %s item: %w", head.Kind, err)
		}
		out = append(out, b)
	}
	return out, nil
}
