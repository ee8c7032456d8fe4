package server

import (
	"fmt"
	"net/http"
)

// DefaultSystemLogsDir is the directory /logs/ serves by default.
const DefaultSystemLogsDir = "/var/log"

// installDebug adds /configz, /logs/ and /checkpoint/ (secure port only).
func (s *Server) installDebug(mux *http.ServeMux) {
	mux.HandleFunc("GET /configz", s.configz)
	if s.cfg.SystemLogs {
		mux.Handle("GET /logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(s.cfg.SystemLogsDir))))
	} else {
		mux.Handle("/logs/", disabled("logs endpoint is disabled."))
	}
	mux.HandleFunc("POST /checkpoint/{namespace}/{pod}/{container}", s.checkpoint)
}

// configz answers the effective configuration as the kubelet does:
// {"kubeletconfig": <KubeletConfiguration>}.
func (s *Server) configz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Configz == nil {
		http.Error(w, "no configuration registered", http.StatusNotFound)
		return
	}
	s.writeJSON(w, r, map[string]any{"kubeletconfig": s.cfg.Configz})
}

// checkpoint answers a container checkpoint request: 404 for an unknown
// pod or container, as the kubelet, else 501 since lockstep does not
// checkpoint containers.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod := findPod(s.p.Pods(), ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist", ns, name), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %s does not exist", container), http.StatusNotFound)
		return
	}
	http.Error(w, fmt.Sprintf("checkpointing of %s/%s/%s failed: lockstep does not support container checkpointing (the kubelet's ContainerCheckpoint feature)", ns, name, container), http.StatusNotImplemented)
}
