//go:build !linux

package podnet

import (
	"errors"
	"net"
	"net/netip"
)

// listenUnanswered needs Linux's handling of a full accept queue.
func listenUnanswered(netip.AddrPort) (net.Listener, net.Conn, error) {
	return nil, nil, errors.New("podnet: unanswered (hanging) TCP ports need Linux")
}
