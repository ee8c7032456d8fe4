package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// healthCheck is one named /healthz check.
type healthCheck struct {
	name  string
	check func() error
	// note, when set, adds a line of detail to a passing check in the
	// verbose listing ("" adds none).
	note func() string
}

// RegistrationReporter is what a Provider may also implement to show in
// /healthz?verbose why the node is not registered yet (with
// --register-node=false: the Node does not exist). It never fails
// /healthz: the daemon is healthy while it waits.
type RegistrationReporter interface {
	NodeRegistration() error
}

// checks are the kubelet's /healthz checks: ping and log always pass,
// syncloop asks the Provider.
func (s *Server) checks() []healthCheck {
	ok := func() error { return nil }
	checks := []healthCheck{
		{name: "ping", check: ok},
		{name: "log", check: ok},
		{name: "syncloop", check: s.p.Healthy},
	}
	if r, isReporter := s.p.(RegistrationReporter); isReporter {
		checks = append(checks, healthCheck{name: "node-registration", check: ok, note: func() string {
			if err := r.NodeRegistration(); err != nil {
				return "waiting: " + err.Error()
			}
			return ""
		}})
	}
	return checks
}

// healthz runs every check (minus ?exclude=name ones): "ok" when all pass,
// else 500 listing each check with the failing one's message. ?verbose
// lists the checks on success too.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	excluded := q["exclude"]
	var b strings.Builder
	failed := false
	for _, c := range s.checks() {
		if slices.Contains(excluded, c.name) {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
			continue
		}
		if c.note != nil {
			if n := c.note(); n != "" {
				fmt.Fprintf(&b, "[+]%s ok (%s)\n", c.name, n)
				continue
			}
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		s.log.Info("healthz check failed", "checks", b.String())
		b.WriteString("healthz check failed\n")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(b.String()))
		return
	}
	if q.Has("verbose") {
		b.WriteString("healthz check passed\n")
		w.Write([]byte(b.String()))
		return
	}
	w.Write([]byte("ok"))
}

// healthzCheck runs one named check: "ok", or 500 with its message.
func (s *Server) healthzCheck(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("check")
	for _, c := range s.checks() {
		if c.name != name {
			continue
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := c.check(); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %s check failed: %v", name, err), http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
		return
	}
	http.NotFound(w, r)
}
