// Package web is seatd's HTTP layer: routes, middleware, page and JSON
// handlers. Handlers decode input, call the hold core and render; the
// rules live in internal/hold.
package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"seatd/internal/app"
)

// Server holds the handlers' dependencies.
type Server struct {
	app *app.App
	log *slog.Logger
	mux *http.ServeMux
}

// New builds the HTTP handler of an assembled app.
func New(a *app.App) *Server {
	s := &Server{app: a, log: a.Log, mux: http.NewServeMux()}
	s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Shutdown closes long-lived connections (live sockets).
func (s *Server) Shutdown() {}

// routes lists every route in one place.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.app.Registry, promhttp.HandlerOpts{Registry: prometheus.Registerer(s.app.Registry)}))
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether this process can serve holds: Postgres must
// answer; Redis down only degrades it to the Postgres path.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := map[string]string{"postgres": "ok", "redis": "ok", "breaker": s.app.Core.BreakerState()}
	status := http.StatusOK
	if err := s.app.Pool.Ping(ctx); err != nil {
		out["postgres"], status = "unavailable", http.StatusServiceUnavailable
	}
	if err := s.app.Redis.Ping(ctx).Err(); err != nil {
		out["redis"] = "unavailable"
	}
	if !s.app.Core.FastPath() {
		out["mode"] = "degraded: Redis unavailable, running on Postgres"
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
