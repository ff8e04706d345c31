package web

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"seatd/web/httpx"
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

// healthz answers that the process is up.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether this process can serve holds, with the state
// of each dependency (Postgres, Redis, the breaker, the mode): the ops
// listener's. Postgres must answer; Redis down only degrades it to the
// Postgres path.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	status, out := s.readiness(r.Context())
	httpx.WriteJSON(w, status, out)
}

// publicReadyz is readyz for the public listener, where load balancers
// look: the same status, but no detail — the state of the breaker and of
// Redis tells an attacker when a flood is working.
func (s *Server) publicReadyz(w http.ResponseWriter, r *http.Request) {
	status, _ := s.readiness(r.Context())
	word := "ok"
	if status != http.StatusOK {
		word = "unavailable"
	}
	httpx.WriteJSON(w, status, map[string]string{"status": word})
}

// readiness checks the dependencies: 200 or 503, and what each said.
func (s *Server) readiness(ctx context.Context) (int, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := map[string]string{"postgres": "ok", "redis": "ok", "breaker": s.deps.Engine.BreakerState(), "mode": "fast"}
	status := http.StatusOK
	if err := s.deps.Store.Ping(ctx); err != nil {
		out["postgres"], status = "unavailable", http.StatusServiceUnavailable
	}
	if err := s.deps.Redis.Ping(ctx).Err(); err != nil {
		out["redis"] = "unavailable"
	}
	if !s.deps.Engine.FastPath() {
		out["mode"] = "degraded: Redis unavailable, running on Postgres"
	}
	return status, out
}
