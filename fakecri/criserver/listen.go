package criserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// SocketPath returns the file path of a "unix:///path" endpoint (a bare
// absolute path is accepted too).
func SocketPath(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		p := strings.TrimPrefix(endpoint, "unix://")
		if p == "" {
			return "", errors.New("empty socket path")
		}
		return p, nil
	case strings.HasPrefix(endpoint, "/"):
		return endpoint, nil
	}
	return "", errors.New("want unix:///path/to/socket")
}

// Listen listens on a unix socket endpoint. A socket file left by a dead
// server (nothing accepts connections on it) is removed first; a live
// socket or a file that is not a socket is refused. Errors read
// "fakecri: listen on <endpoint>: <cause>".
func Listen(endpoint string) (net.Listener, error) {
	fail := func(err error) error { return fmt.Errorf("fakecri: listen on %s: %w", endpoint, err) }
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, fail(err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, fail(err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Err != nil {
			err = opErr.Err
		}
		return nil, fail(err)
	}
	return lis, nil
}

// removeStaleSocket removes path if it is a socket nobody listens on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("another server is listening on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether socket %s is in use: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}

// Serve serves rt on lis until ctx ends, then shuts down cleanly: event
// streams end, in-flight calls finish (for at most grace, after which the
// server stops hard) and the socket file is removed.
func Serve(ctx context.Context, lis net.Listener, rt *fakecri.Runtime, grace time.Duration) error {
	srv := NewGRPCServer(rt)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		rt.CloseEventStreams()
		stopped := make(chan struct{})
		go func() {
			srv.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(grace):
			srv.Stop()
			<-stopped
		}
		err = <-errc
	}
	if path := lis.Addr().String(); path != "" {
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) && err == nil {
			err = rmErr
		}
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
