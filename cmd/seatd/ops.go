package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"seatd/internal/config"
)

// serveOps serves h (metrics, profiles) on the ops listener at addr. A
// port taken at the default address is not fatal: a second seatd on the
// same host runs without one (and says so); an address the operator
// chose must work. It returns the address bound ("" when none) and how to
// stop it.
func serveOps(addr string, explicit bool, h http.Handler, log *slog.Logger) (bound string, stop func(), err error) {
	if addr == config.OpsOff {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if explicit {
			return "", nil, fmt.Errorf("SEATD_OPS_ADDR: %w", err)
		}
		log.Warn("ops listener not started: its default address is taken; set SEATD_OPS_ADDR (port 0 picks a free one)",
			"addr", addr, "err", err)
		return "", func() {}, nil
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	bound = ln.Addr().String()
	log.Info("ops listening (metrics, pprof); keep it off the public network", "addr", bound)
	return bound, func() { _ = srv.Close() }, nil
}
