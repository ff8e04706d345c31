package config

import (
	"fmt"
	"net"
	"net/netip"
)

// listenerProblems checks the addresses of the ops and pprof listeners:
// what they show is for the host's own agents, not the public.
func (c Config) listenerProblems() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.OpsAddr != OpsOff {
		if host, _, err := net.SplitHostPort(c.OpsAddr); err != nil {
			bad("SEATD_OPS_ADDR: %q must be host:port (port 0 picks a free one) or %q", c.OpsAddr, OpsOff)
		} else if !c.OpsPublic && !closedHost(host) {
			// Metrics name tenants' events, pprof shows memory and costs
			// CPU on demand: the listener is for the host's own agents or a
			// private network, and anything wider is an explicit choice.
			bad("SEATD_OPS_ADDR: %q must be a loopback or private address (127.0.0.1:9090, 10.0.0.5:9090); "+
				"to serve it on every interface or a public address behind your own firewall, set SEATD_OPS_PUBLIC=true", c.OpsAddr)
		}
	}
	if c.PprofAddr != "" {
		// Profiles show internals and cost CPU: never on a public address.
		host, _, err := net.SplitHostPort(c.PprofAddr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			bad("SEATD_PPROF_ADDR: %q must be a loopback host:port such as 127.0.0.1:6060", c.PprofAddr)
		}
	}
	return errs
}

// closedHost reports whether a listen host is reachable only from the
// machine or a private network: localhost, a loopback address or a
// private one (RFC 1918, fc00::/7). An empty host or 0.0.0.0 listens on
// every interface, and a host name may resolve anywhere: neither is.
func closedHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && (a.Unmap().IsLoopback() || a.Unmap().IsPrivate())
}
