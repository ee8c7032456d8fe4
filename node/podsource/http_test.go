package podsource_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// scriptedHTTP answers with the body or error the test set last and
// records each request's headers.
type scriptedHTTP struct {
	body    string
	err     error
	headers []map[string][]string
	urls    []string
}

func (s *scriptedHTTP) Get(_ context.Context, url string, h map[string][]string) ([]byte, error) {
	s.urls = append(s.urls, url)
	s.headers = append(s.headers, h)
	if s.err != nil {
		return nil, s.err
	}
	return []byte(s.body), nil
}

const twoPodList = `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: busybox:1.36}]}
- metadata: {name: b, namespace: kube-system}
  spec: {containers: [{name: c, image: busybox:1.36}]}
`

func TestParseManifestsForms(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
		wantErr    string
	}{
		{"single pod", goodManifest, []string{"default/web-node-1"}, ""},
		{"pod list", twoPodList, []string{"default/a-node-1", "kube-system/b-node-1"}, ""},
		{"json pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, []string{"default/j-node-1"}, ""},
		{"multi-document", goodManifest + "---\n" + strings.Replace(goodManifest, "name: web", "name: api", 1) + "---\n", []string{"default/web-node-1", "default/api-node-1"}, ""},
		{"empty body", "", nil, ""},
		{"invalid pod fails all", twoPodList + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", nil,
			"document 1, pod 0: invalid pod manifest: spec.containers: at least one container is required"},
		{"duplicate", goodManifest + "---\n" + goodManifest, nil, "document 1, pod 0: pod default/web-node-1 is defined twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := podsource.ParseManifests([]byte(tt.body), "node-1", seenAt)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Namespace+"/"+p.Name)
				if src := p.Annotations[podutil.AnnotationConfigSource]; src != podsource.SourceHTTP || !podutil.IsStaticPod(p) {
					t.Errorf("pod %s: config.source %q, want %q (a static pod)", p.Name, src, podsource.SourceHTTP)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPSourceSameManifestTwoSources: the same manifest over HTTP and in
// the directory are two pods (different UIDs).
func TestHTTPSourceSameManifestTwoSources(t *testing.T) {
	file, err := podsource.ParseManifest([]byte(goodManifest), "node-1", seenAt)
	if err != nil {
		t.Fatal(err)
	}
	http, err := podsource.ParseManifests([]byte(goodManifest), "node-1", seenAt)
	if err != nil {
		t.Fatal(err)
	}
	if file.UID == http[0].UID {
		t.Errorf("file and http pods share UID %s", file.UID)
	}
}

// TestHTTPSourcePollsKeepsLastGoodAndReports: fetched at once and every
// period with the headers; an unreachable server or an invalid body keeps
// the pods, each cause reported once while it lasts; a new body replaces
// them.
func TestHTTPSourcePollsKeepsLastGoodAndReports(t *testing.T) {
	w := newWorld(t, podsource.SourceHTTP)
	srv := &scriptedHTTP{body: twoPodList}
	var reported []string
	src := podsource.NewHTTPSource(w.d.Core, srv, podsource.HTTPConfig{
		URL: "http://manifests.example/node-1", Header: map[string][]string{"Authorization": {"Bearer t"}},
		NodeName: "node-1", OnManifestError: func(_ string, err error) { reported = append(reported, err.Error()) },
	}, w.m)
	ctx, cancel := w.k.WithCancel(context.Background())
	defer cancel()
	w.k.Tasks().Go("source http", func() { src.Run(ctx) })

	w.run(time.Second)
	if diff := cmp.Diff([]string{"ADD http default/a-node-1,kube-system/b-node-1"}, w.summary()); diff != "" {
		t.Errorf("first fetch (-want +got):\n%s", diff)
	}
	srv.err = errors.New("connection refused")
	w.run(45 * time.Second) // two polls fail
	srv.err = nil
	srv.body = "kind: Pod\n"
	w.run(20 * time.Second)
	if got := w.summary(); len(got) != 0 {
		t.Errorf("failed fetches changed the pods: %v", got)
	}
	wantReports := []string{
		"fetch static pod manifests from http://manifests.example/node-1: connection refused",
		`static pod manifests from http://manifests.example/node-1: document 0, pod 0: invalid pod manifest: apiVersion is "", want "v1"; metadata.name is required; spec.containers: at least one container is required`,
	}
	if diff := cmp.Diff(wantReports, reported); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	srv.body = goodManifest
	w.run(20 * time.Second)
	if diff := cmp.Diff([]string{"REMOVE http default/a-node-1,kube-system/b-node-1", "ADD http default/web-node-1"}, w.summary()); diff != "" {
		t.Errorf("new body (-want +got):\n%s", diff)
	}
	if n := len(srv.urls); n != 5 {
		t.Errorf("%d fetches in 86 s, want 5 (at once, then every 20 s)", n)
	}
	for i, h := range srv.headers {
		if diff := cmp.Diff(map[string][]string{"Authorization": {"Bearer t"}}, h); diff != "" {
			t.Errorf("fetch %d headers (-want +got):\n%s", i, diff)
		}
	}
}

// TestHTTPSourceDownAtStart: a server down at start syncs the source with
// no pods (nothing waits on it), and its pods come once it answers.
func TestHTTPSourceDownAtStart(t *testing.T) {
	w := newWorld(t, podsource.SourceHTTP)
	srv := &scriptedHTTP{err: errors.New("404 Not Found")}
	src := podsource.NewHTTPSource(w.d.Core, srv, podsource.HTTPConfig{URL: "http://m/x", NodeName: "node-1"}, w.m)
	ctx, cancel := w.k.WithCancel(context.Background())
	defer cancel()
	w.k.Tasks().Go("source http", func() { src.Run(ctx) })
	w.run(time.Second)
	if !w.m.AllSeen() {
		t.Errorf("source not synced after a failed first fetch")
	}
	srv.err, srv.body = nil, goodManifest
	w.run(20 * time.Second)
	if diff := cmp.Diff([]string{"ADD http default/web-node-1"}, w.summary()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
