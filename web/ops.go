package web

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Ops is the handler of the ops listener (SEATD_OPS_ADDR, loopback by
// default), never of the public port: Prometheus metrics and profiles show
// internals (route counts, memory, goroutines) and profiles cost CPU. The
// health probes answer here too, for agents on the host; load balancers
// keep them on the public port.
func (s *Server) Ops() http.Handler {
	mux := http.NewServeMux()
	// The hub's per-event series come and go with its topics, so it is
	// gathered beside the app's registry rather than registered on it.
	live := prometheus.NewRegistry()
	live.MustRegister(s.hub)
	metrics := prometheus.Gatherers{s.deps.Registry, live}
	s.opsRoutes(mux, promhttp.HandlerFor(metrics, promhttp.HandlerOpts{Registry: s.deps.Registry}))
	return mux
}
