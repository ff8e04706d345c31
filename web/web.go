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
	limits   *limiter
	metrics  *httpMetrics
	ends     *auth.SessionEnds
	unlisten func() // stops listening for session ends
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
	s.hub = live.New(d.Core, liveRenderer{core: d.Core}, d.Log, s.liveOptions())
	s.metrics = newHTTPMetrics(d.Registry)
	s.sessions, s.sstore = newSessions(d, !o.noSessionCache)
	s.limits = newLimiter(d.Redis, d.Cfg.KeyPrefix, d.Core.FastPath, d.Log, s.metrics.rateLimited)
	s.limits.configure(d.Cfg)
	s.flights = newRegistryFlights(d.Core, d.Cfg.RegistryCheckCooldown)
	s.listenSessionEnds()
	s.routes()
	// Outermost first: log and recover, headers on every answer, refuse
	// hostile text and cross-site writes before touching the session
	// store, then the session and its actor, then the routes.
	s.handler = s.observe(s.securityHeaders(s.refuseHostileText(s.crossOrigin(s.withSession(s.routeInfo(s.mux))))))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Shutdown closes the live sockets with "service restart", so browsers
// reconnect (to another process), and waits for their goroutines.
func (s *Server) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.unlisten()
	if err := s.hub.Shutdown(ctx); err != nil {
		s.log.Warn("live hub shutdown", "err", err)
	}
}

// routes lists every route in one place. Roles per DESIGN §7: holds,
// checkout and purchase are the buyer's; hold lists and occupancy are
// staff's; blocking and the registry are the organizer's.
func (s *Server) routes() {
	// Probes, where load balancers look; metrics and profiles are on the
	// ops listener only (Ops, ops.go).
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)

	// Accounts.
	s.mux.HandleFunc("POST /login", s.public(s.login))
	s.mux.HandleFunc("POST /o/{org}/signup", s.public(s.signup))
	s.mux.HandleFunc("POST /logout", s.public(s.logout))
	s.mux.HandleFunc("GET /api/v1/me", s.authed(anyRole, s.me))

	// Events and seats.
	s.mux.HandleFunc("GET /api/v1/events", s.authed(anyRole, s.listEvents))
	s.mux.HandleFunc("GET /api/v1/events/{event}", s.authed(anyRole, s.getEvent))
	s.mux.HandleFunc("GET /api/v1/events/{event}/seats", s.authed(anyRole, s.listSeats))

	// Buying.
	s.mux.HandleFunc("POST /api/v1/events/{event}/holds", s.authed(buyer, s.createHold))
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds/mine", s.authed(buyer, s.myHolds))
	s.mux.HandleFunc("DELETE /api/v1/holds/{hold}", s.authed(anyRole, s.releaseHold))
	s.mux.HandleFunc("POST /api/v1/events/{event}/checkout", s.authed(buyer, s.checkout))
	s.mux.HandleFunc("POST /api/v1/events/{event}/purchase", s.authed(buyer, s.purchase))

	// Staff.
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds", s.authed(staff, s.eventHolds))
	s.mux.HandleFunc("GET /api/v1/events/{event}/occupancy", s.authed(staff, s.occupancy))
	// Box office blocks and unblocks too (DESIGN §1: their page has a
	// small seat map for it).
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/block", s.authed(staff, s.blockSeat))
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/unblock", s.authed(staff, s.unblockSeat))
	s.mux.HandleFunc("GET /api/v1/events/{event}/registry", s.authed(organizer, s.registry))
	s.mux.HandleFunc("POST /api/v1/events/{event}/registry/reconcile", s.authed(organizer, s.reconcile))

	// Pages and the live socket.
	s.pageRoutes()
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports whether this process can serve holds: Postgres must
// answer; Redis down only degrades it to the Postgres path.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := map[string]string{"postgres": "ok", "redis": "ok", "breaker": s.deps.Core.BreakerState(), "mode": "fast"}
	status := http.StatusOK
	if err := s.deps.Pool.Ping(ctx); err != nil {
		out["postgres"], status = "unavailable", http.StatusServiceUnavailable
	}
	if err := s.deps.Redis.Ping(ctx).Err(); err != nil {
		out["redis"] = "unavailable"
	}
	if !s.deps.Core.FastPath() {
		out["mode"] = "degraded: Redis unavailable, running on Postgres"
	}
	writeJSON(w, status, out)
}
