package server

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// pprofPath is where the profiling endpoints live, as on the kubelet.
const pprofPath = "/debug/pprof/"

// installProfiling serves net/http/pprof under /debug/pprof/ when enabled
// (enableProfilingHandler), else answers 405 "profiling endpoint is
// disabled." like the kubelet. Only the secure port installs it, so every
// request is authenticated and authorized (nodes/proxy).
func (s *Server) installProfiling(mux *http.ServeMux) {
	if !s.cfg.Profiling {
		mux.Handle(pprofPath, disabled("profiling endpoint is disabled."))
		return
	}
	mux.HandleFunc(pprofPath, func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, pprofPath) {
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "cmdline":
			pprof.Cmdline(w, r)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Index(w, r) // the index, and named profiles (heap, goroutine…)
		}
	})
}

// disabled answers 405 with msg, as the kubelet's disabled endpoints do.
func disabled(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, msg, http.StatusMethodNotAllowed)
	})
}
