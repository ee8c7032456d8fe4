package server

import (
	"net/http"
	"net/http/pprof"
)

// installProfiling adds the Go profiler under /debug/pprof/ (the index,
// the named profiles, and profile, symbol, cmdline and trace), or, when
// disabled, an answer saying so.
func installProfiling(mux *http.ServeMux, enabled bool) {
	if !enabled {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "profiling endpoint is disabled.", http.StatusMethodNotAllowed)
		})
		return
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
