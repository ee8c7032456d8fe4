package manifesthttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGet(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("kind: Pod\n"))
	}))
	defer srv.Close()
	c := New(5 * time.Second)
	body, err := c.Get(context.Background(), srv.URL+"/pods", map[string][]string{"X-A": {"1", "2"}, "Authorization": {"Bearer t"}})
	if err != nil || string(body) != "kind: Pod\n" {
		t.Fatalf("Get = %q, %v", body, err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, got.Values("X-A")); diff != "" {
		t.Errorf("X-A header (-want +got):\n%s", diff)
	}
	if got.Get("Authorization") != "Bearer t" {
		t.Errorf("Authorization %q", got.Get("Authorization"))
	}
	if _, err := c.Get(context.Background(), srv.URL+"/missing", nil); err == nil || !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("404: err %v, want one naming the status", err)
	}
}
