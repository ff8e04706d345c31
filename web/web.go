// Package web is seatd's HTTP layer: routes, middleware, page and JSON
// handlers. Handlers decode input, call the hold core and render; the
// rules live in internal/hold.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"

	"seatd/internal/auth"
	"seatd/internal/webhook"
	"seatd/static"
	"seatd/web/live"
)

// Server holds the handlers' dependencies.
type Server struct {
	deps     Deps
	log      *slog.Logger
	mux      *http.ServeMux
	handler  http.Handler
	dec      *decoder
	sessions *scs.SessionManager
	assets   *static.Assets
	hub      *live.Hub
	sstore   *sessionStore
	ends     *sessionEnds
	limits   *limiter
	metrics  *httpMetrics
	keys     *auth.APIKeys
	hooks    *webhook.Endpoints
	flights  *registryFlights
}

// options are knobs tests turn; New uses the defaults.
type options struct {
	noSessionCache bool
}

// New builds the HTTP handler from its dependencies.
func New(d Deps) *Server { return newServer(d, options{}) }

func newServer(d Deps, o options) *Server {
	assets, err := static.New()
	if err != nil {
		// The files are embedded at build time; failing to hash them is a
		// broken binary, not a runtime condition.
		panic(err)
	}
	s := &Server{deps: d, log: d.Log, mux: http.NewServeMux(), dec: newDecoder(), assets: assets}
	s.hub = live.New(d.Engine, liveRenderer{events: d.Events}, d.Log, s.liveOptions())
	s.metrics = newHTTPMetrics(d.Registry)
	s.sessions, s.sstore = newSessions(d, !o.noSessionCache)
	s.limits = newLimiter(d.Redis, d.Cfg.KeyPrefix, d.Engine.FastPath, d.Log, s.metrics.rateLimited)
	s.limits.configure(d.Cfg)
	s.flights = newRegistryFlights(d.Monitor, d.Cfg.RegistryCheckCooldown)
	s.ends = newSessionEnds(d.Pool, d.Notifier, s.sstore, s.hub, s.log.With("component", "session_ends"))
	s.keys = auth.NewAPIKeys(d.Store.Accounts, d.Notifier, d.Log.With("component", "api_keys"))
	s.hooks = webhook.NewEndpoints(d.Store.Webhooks, d.Cfg.WebhookAllowPrivate)
	s.routes()
	// Outermost first: log and recover, compress, headers on every answer, refuse
	// hostile text and cross-site writes before touching the session
	// store, then the session and its actor, then the routes.
	s.handler = s.observe(compress(s.securityHeaders(s.refuseHostileText(s.crossOrigin(s.withSession(s.routeInfo(s.mux)))))))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Run is the server's background work, until ctx ends: it hears session
// ends (and proves it does, see sessionEnds) and API key revocations
// through the notifier. New starts nothing: the caller runs it (app runs
// it with the process's other jobs, after the notifier).
func (s *Server) Run(ctx context.Context) {
	stop := s.keys.Listen()
	defer stop()
	s.ends.run(ctx)
}

// Shutdown closes the live sockets with "service restart", so browsers
// reconnect (to another process), and waits for their goroutines.
func (s *Server) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.hub.Shutdown(ctx); err != nil {
		s.log.Warn("live hub shutdown", "err", err)
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether this process can serve holds: Postgres must
// answer; Redis down only degrades it to the Postgres path.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
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
	writeJSON(w, status, out)
}
