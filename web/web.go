// Package web is seatd's HTTP server. New builds its parts — the shared
// helpers and middleware (web/httpx), the sessions and role guards
// (web/session), the rate limits (web/ratelimit), the live hub
// (web/live), the page frame (web/render), the reads the handlers share
// (web/query), and the handlers: the JSON API (web/api), the buyer pages
// (web/pages) and the staff pages (web/staff) — and puts the middleware
// in order; routes.go lists every route with its role guard; Run and
// Shutdown are the server's lifecycle. Handlers decode input, call the
// hold core and render; the rules live in internal/hold.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"seatd/internal/auth"
	"seatd/internal/gate"
	"seatd/internal/waitroom"
	"seatd/internal/webhook"
	"seatd/static"
	"seatd/web/api"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/pages"
	"seatd/web/query"
	"seatd/web/queue"
	"seatd/web/ratelimit"
	"seatd/web/render"
	"seatd/web/session"
	"seatd/web/staff"
)

// Server is the assembled HTTP handler of the public listener (and, with
// Ops, of the ops listener).
type Server struct {
	deps Deps
	log  *slog.Logger
	mux  *http.ServeMux
	// machine routes the calls of other systems that carry no cookie and
	// are checked by a signature of their own (the payment provider's
	// webhook): only logging and recovery stand before them, no session,
	// cross-origin or page middleware.
	machine  *http.ServeMux
	handler  http.Handler
	guard    session.Guards
	sessions *session.Sessions
	assets   *static.Assets
	hub      *live.Hub
	limits   *ratelimit.Limiter
	keys     *auth.APIKeys
	hooks    *webhook.Endpoints
	// events reads the events a live socket may watch.
	events *query.Events
	// The handlers routes.go routes to.
	api   *api.API
	pages *pages.Pages
	staff *staff.Pages
	// gate is the waiting room in front of the map (web/queue).
	gate *queue.Gate
}

// options are knobs tests turn; New uses the defaults.
type options struct {
	noSessionCache bool
}

// New builds the HTTP handler from its dependencies.
func New(d Deps) *Server { return newServer(d, options{}) }

// chartUploadWait is how long a chart upload waits for its turn before
// it is answered 503 with Retry-After: about what one upload of the
// largest chart takes to read and decode.
const chartUploadWait = 5 * time.Second

func newServer(d Deps, o options) *Server {
	assets, err := static.New()
	if err != nil {
		// The files are embedded at build time; failing to hash them is a
		// broken binary, not a runtime condition.
		panic(err)
	}
	s := &Server{deps: d, log: d.Log, mux: http.NewServeMux(), machine: http.NewServeMux(), assets: assets}
	dec, errs := httpx.NewDecoder(), httpx.NewErrors(d.Log)
	s.hub = live.New(d.Engine, pages.NewLiveSeats(d.Events), d.Log, live.Options{
		MaxClients:    d.Cfg.MaxSockets,
		MaxPerSession: d.Cfg.MaxSocketsPerSession,
		MaxPerUser:    d.Cfg.MaxSocketsPerUser,
		MaxPerNetwork: d.Cfg.MaxSocketsPerNetwork,
		Tick:          d.Cfg.LiveTick,
		SessionExpiry: d.Store.Accounts.SessionExpiry,
	})
	s.limits = ratelimit.New(d.Redis, d.Cfg, d.Engine.FastPath, d.Log, d.Registry)
	lockout := ratelimit.NewLockout(s.limits, d.Cfg)
	s.keys = auth.NewAPIKeys(d.Store.Accounts, d.Notifier, d.Log.With("component", "api_keys"))
	s.hooks = webhook.NewEndpoints(d.Store.Webhooks, d.Cfg.WebhookAllowPrivate)
	s.sessions = session.New(session.Options{Pool: d.Pool, Store: d.Store.Accounts, Devices: d.Store.Devices, Notifier: d.Notifier, Hub: s.hub,
		Keys: s.keys, KeyLimit: s.limits, Errors: errs, Log: d.Log,
		Lifetime: d.Cfg.SessionLifetime, IdleTimeout: d.Cfg.SessionIdleTimeout,
		CookieSecure: d.Cfg.CookieSecure, NoCache: o.noSessionCache,
		ClientIP: s.limits.ClientIP, MaxPerUser: d.Cfg.MaxSessionsPerUser, RememberFor: d.Cfg.SessionRememberFor,
		NewAccountAge: d.Cfg.NewAccountAge, NewAccountHoldCap: d.Cfg.NewAccountHoldCap})
	frame := render.New(d.Log, errs, s.sessions, assets.Path)
	s.guard = session.Guards{Errors: errs, RenderError: frame.Error}

	// The reads and checks the API and the pages share.
	s.events = query.NewEvents(d.Store.Events)
	bookings := query.NewBookings(d.BoxOffice, d.Store.Events)
	deliveries := query.NewDeliveries(d.Store.Webhooks)
	registry := api.NewRegistryFlights(d.Monitor, d.Cfg.RegistryCheckCooldown)
	line := waitroom.NewLine(d.Redis, d.Cfg.KeyPrefix, d.Cfg.QueueAdmission)
	s.gate = queue.New(d.Events, waitroom.NewPlaces(line), waitroom.NewPasses(d.Cfg.QueueSecret, d.Cfg.QueueAdmission), s.sessions, d.Cfg.CookieSecure)

	// A chart upload may hold 32 MiB while it is read and decoded: a few at
	// once, a few more waiting up to chartUploadWait, the rest told when to
	// come back.
	uploads := gate.New(d.Cfg.ChartUploads, chartUploadWait, 4*d.Cfg.ChartUploads)

	s.api = api.New(api.Deps{Log: d.Log, Decoder: dec, Limits: s.limits, Lockout: lockout, Sessions: s.sessions,
		Devices: ratelimit.NewDeviceCookies(d.Cfg.TicketSecret, d.Cfg.CookieSecure),
		Render:  frame, Uploads: uploads, Holds: d.Holds, BoxOffice: d.BoxOffice, Events: d.Events, Waitlist: d.Waitlist, Monitor: d.Monitor,
		Auth: d.Accounts, Keys: s.keys, Endpoints: s.hooks, Accounts: d.Store.Accounts, Charts: d.Store.Charts,
		EventStore: d.Store.Events, Audit: d.Store.Audit, Webhooks: d.Store.Webhooks,
		Visible: s.events, Bookings: bookings, Deliveries: deliveries, Registry: registry,
		Door: d.Door, Tickets: d.Tickets, BookingStore: d.Store.Bookings, Queue: s.gate,
		Payments: d.Payments, TestCheckout: d.TestPayments != nil})
	s.pages = pages.New(pages.Deps{Cfg: d.Cfg, Render: frame, Limits: s.limits, Sessions: s.sessions, Holds: d.Holds,
		Events: d.Events, Waitlist: d.Waitlist, Accounts: d.Store.Accounts, Invites: d.Accounts, WaitlistStore: d.Store.Waitlist,
		Visible: s.events, Details: d.Details, Codes: d.Tickets, MyBookings: d.Store.Bookings,
		Queue: s.gate, Payments: d.Payments, TestPayments: d.TestPayments})
	s.staff = staff.New(staff.Deps{Cfg: d.Cfg, Log: d.Log, Render: frame, Decoder: dec, Sessions: s.sessions,
		Engine: d.Engine, Holds: d.Holds, BoxOffice: d.BoxOffice, Events: d.Events, Waitlist: d.Waitlist, Monitor: d.Monitor,
		Keys: s.keys, Endpoints: s.hooks, Policy: d.Accounts, Invites: d.Accounts, Limits: s.limits, Accounts: d.Store.Accounts, Audit: d.Store.Audit, Charts: d.Store.Charts,
		EventStore: d.Store.Events, HoldStore: d.Store.Holds, BookingStore: d.Store.Bookings, Webhooks: d.Store.Webhooks,
		WaitlistStore: d.Store.Waitlist, Visible: s.events, Bookings: bookings, Deliveries: deliveries, Registry: registry,
		Door: d.Door, Line: line, Payments: d.Payments})
	// The hub pushes buyers their place in line on the seat map's socket,
	// and staff their frames on the dashboard's and box office's.
	s.hub.EnableWaitlist(live.WaitlistOptions{Source: d.Engine, Renderer: waitlistPanels{s.pages.Panels, s.staff.Panel}})
	s.hub.EnableStaff(live.StaffOptions{Renderer: s.staff, Notice: s.staff.BoxOffice.ReleaseNotice})
	// and the door's figures to dashboards after admissions.
	s.hub.EnableDoor(live.DoorOptions{Source: d.Door, Renderer: s.staff})
	s.routes()

	// Outermost first: log and recover, compress, headers on every answer, refuse
	// hostile text and cross-site writes before touching the session
	// store, then the session and its actor, then the routes. The machine
	// routes are logged and recovered only.
	people := httpx.Compress(
		httpx.SecurityHeaders(d.Cfg.CookieSecure,
			httpx.RefuseHostileText(errs, frame.Error,
				httpx.CrossOrigin(errs, hasBearerKey,
					s.sessions.Load(
						httpx.RouteInfo(errs, s.mux))))))
	machine := httpx.RouteInfo(errs, s.machine)
	s.handler = httpx.Observe(d.Log, d.Registry, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := s.machine.Handler(r); pattern != "" {
			machine.ServeHTTP(w, r)
			return
		}
		people.ServeHTTP(w, r)
	}))
	return s
}

// hasBearerKey exempts API-key requests from the cross-origin check: they
// never use the session cookie (session.BearerKey).
func hasBearerKey(r *http.Request) bool {
	_, ok := session.BearerKey(r)
	return ok
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Run is the server's background work, until ctx ends: it hears session
// ends (and proves it does, see web/session) and API key revocations
// through the notifier. New starts nothing: the caller runs it (app runs
// it with the process's other jobs, after the notifier).
func (s *Server) Run(ctx context.Context) {
	stop := s.keys.Listen()
	defer stop()
	s.sessions.Run(ctx)
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

// waitlistPanels renders the waitlist panels the live hub pushes: the
// buyers' (web/pages) and the dashboard's (web/staff).
type waitlistPanels struct {
	*pages.WaitlistPanels
	*staff.WaitlistPanel
}
