package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestLoopbackIsBindableAndBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if low > floor+1000 && (port < floor || port >= low) {
			t.Fatalf("port %d outside [%d, %d)", port, floor, low)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", port, err)
		}
		_ = ln.Close()
	}
}

func TestPortsNeverHandsOutAPortTwice(t *testing.T) {
	var p Ports
	seen := map[int]bool{}
	for range 200 {
		port, err := p.Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}
