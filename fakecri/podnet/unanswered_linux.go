package podnet

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// listenUnanswered binds ap with a listen backlog of 0 and fills its
// accept queue with one connection of its own that is never accepted:
// Linux then drops every further SYN, so a client's connect is never
// answered and runs into its own timeout — a FAKECRI_TCP "hang", which a
// socket that accepts cannot show (the kernel completes the handshake
// before any accept). The returned listener is never accepted on.
func listenUnanswered(ap netip.AddrPort) (net.Listener, net.Conn, error) {
	family, sa := syscall.AF_INET, syscall.Sockaddr(&syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()})
	if a := ap.Addr().Unmap(); a.Is6() {
		family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket for %s: %w", ap, err)
	}
	f := os.NewFile(uintptr(fd), "unanswered "+ap.String())
	defer f.Close()
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return nil, nil, fmt.Errorf("SO_REUSEADDR on %s: %w", ap, err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		return nil, nil, fmt.Errorf("listen tcp %s: bind: %w", ap, err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return nil, nil, fmt.Errorf("listen tcp %s: %w", ap, err)
	}
	lis, err := net.FileListener(f)
	if err != nil {
		return nil, nil, fmt.Errorf("listen tcp %s: %w", ap, err)
	}
	filler, err := net.DialTimeout("tcp", ap.String(), 5*time.Second)
	if err != nil {
		lis.Close()
		return nil, nil, fmt.Errorf("fill the accept queue of %s: %w", ap, err)
	}
	return lis, filler, nil
}
