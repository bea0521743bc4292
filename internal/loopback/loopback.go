// Package loopback is the one answer, for every part of toolsvc, to "is
// this only reachable from this machine?". Two questions with different
// inputs: Host for a name someone wrote (a Host header, a URL's host), Addr
// for an address the kernel gave (a listener's, a connection's peer).
package loopback

import (
	"net"
	"net/netip"
	"strings"
)

// Host reports whether host, a name or an IP literal with or without a
// port (a Host header, a URL's host), names this machine's loopback
// interface: "localhost" in any case, an address in 127.0.0.0/8, ::1, or
// an IPv4-mapped loopback address. Any other name, even one that resolves
// to a loopback address or begins with "127.", is not: the answer never
// depends on DNS.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Addr reports whether a, a listener's address or a connection's peer,
// is reachable from this machine only: a loopback IP, or an address of a
// network that is not IP (a Unix socket, an in-memory pipe). An unspecified
// address (a listener on ":50051", every interface) is not.
func Addr(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UDPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	switch a.Network() {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		ap, err := netip.ParseAddrPort(a.String())
		return err == nil && ap.Addr().Unmap().IsLoopback()
	}
	return true
}
