// Package freeport finds loopback TCP ports for processes a test or the
// load generator starts and restarts on a fixed address.
//
// A port the kernel hands out for ":0" comes from the ephemeral range, the
// same range outgoing connections draw from: between closing the probe
// listener and the child process binding it, or while a killed process is
// down, any outgoing connection on the machine may take it. Ports below
// that range are only ever taken by a listener asking for them by number.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// floor is the lowest port handed out: above the fixed ports of the
// private Postgres, Redis, Mailpit and stripe-mock instances (25xxx-27xxx).
const floor = 28000

// Loopback returns a port on 127.0.0.1 nobody listens on right now, chosen
// below the ephemeral range when the kernel says where that range starts.
func Loopback() (int, error) {
	low := ephemeralLow()
	if low > floor+1000 {
		for range 64 {
			port := floor + rand.IntN(low-floor) // #nosec G404 -- picking a test port needs no secrecy
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				_ = ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("freeport: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Ports hands out ports as Loopback does, never the same one twice: the
// processes one test binary starts side by side, each on the port it was
// given and restarted on it after a kill, cannot draw one another's (a
// port is free while its process is down, or before it has bound it).
type Ports struct {
	mu    sync.Mutex
	given map[int]bool
}

// Loopback returns a port nobody listens on right now that p never
// handed out before.
func (p *Ports) Loopback() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 64 {
		port, err := Loopback()
		if err != nil {
			return 0, err
		}
		if !p.given[port] {
			if p.given == nil {
				p.given = map[int]bool{}
			}
			p.given[port] = true
			return port, nil
		}
	}
	return 0, errors.New("freeport: every port found was handed out already")
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}
