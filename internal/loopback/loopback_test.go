package loopback

import (
	"net"
	"testing"
)

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.9.9.9:443": true, "[::1]:80": true, "::1": true,
		"::ffff:127.0.0.1": true,
		"127.evil.example": false, "localhost.evil.example": false, "10.0.0.1": false, "[::]:80": false, "0.0.0.0": false,
		"example.com": false, "": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

type otherTCP struct{ s string }

func (a otherTCP) Network() string { return "tcp" }
func (a otherTCP) String() string  { return a.s }

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		a    net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1}, true},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}, false},
		{&net.TCPAddr{Port: 50051}, false}, // ":50051": every interface
		{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, true},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, true},
		{pipeAddr{}, true},
		{otherTCP{"127.0.0.1:5"}, true},
		{otherTCP{"[::ffff:127.0.0.1]:5"}, true},
		{otherTCP{"192.0.2.1:5"}, false},
	} {
		if got := Addr(tc.a); got != tc.want {
			t.Errorf("Addr(%v %v) = %v, want %v", tc.a.Network(), tc.a, got, tc.want)
		}
	}
}
