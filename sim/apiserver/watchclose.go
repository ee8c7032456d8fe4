package apiserver

import (
	"fmt"
	"io"
)

// CloseWatches ends every open pod watch the way a kube-apiserver ends one
// whose timeout is over: not a fault (the API stays healthy), the stream
// simply ends and the client lists or watches again.
func (s *Server) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.breakWatchesLocked(func(w *podWatch) error {
		return fmt.Errorf("watch pods on node %q: closed by the server at its timeout: %w", w.node, io.EOF)
	})
	s.log.Info("apiserver: pod watches closed at their timeout", "watches", n)
}
