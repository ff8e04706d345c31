package web

import (
	"net/http"
	"net/http/pprof"

	"seatd/internal/store"
	"seatd/web/live"
)

// routes lists every route of the public listener in one place. Roles
// (docs/architecture.md#roles-and-tenancy): holds, checkout and purchase are the buyer's; hold lists and
// occupancy are staff's; blocking and the registry are the organizer's.
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
	s.mux.HandleFunc("POST /api/v1/events", s.authed(organizer, s.createEvent))
	s.mux.HandleFunc("PATCH /api/v1/events/{event}", s.authed(organizer, s.updateEvent))
	s.mux.HandleFunc("DELETE /api/v1/events/{event}", s.authed(organizer, s.deleteEvent))

	// Venue charts (docs/architecture.md#charts-and-events); the organizer's alone.
	s.mux.HandleFunc("POST /api/v1/charts", s.authed(organizer, s.createChart))
	s.mux.HandleFunc("GET /api/v1/charts", s.authed(organizer, s.listCharts))
	s.mux.HandleFunc("GET /api/v1/charts/{chart}", s.authed(organizer, s.getChart))
	s.mux.HandleFunc("PUT /api/v1/charts/{chart}", s.authed(organizer, s.updateChart))
	s.mux.HandleFunc("DELETE /api/v1/charts/{chart}", s.authed(organizer, s.deleteChart))

	// Buying.
	// Staff hold here too, for a named customer only (createHold).
	s.mux.HandleFunc("POST /api/v1/events/{event}/holds", s.authed(anyRole, s.createHold))
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds/mine", s.authed(buyer, s.myHolds))
	s.mux.HandleFunc("DELETE /api/v1/holds/{hold}", s.authed(anyRole, s.releaseHold))
	s.mux.HandleFunc("POST /api/v1/events/{event}/checkout", s.authed(buyer, s.checkout))
	s.mux.HandleFunc("POST /api/v1/events/{event}/purchase", s.authed(buyer, s.purchase))
	// The waitlist (docs/architecture.md#the-waitlist): buyers join and leave; staff see the line
	// and may take anyone out of it.
	s.mux.HandleFunc("POST /api/v1/events/{event}/waitlist", s.authed(buyer, s.joinWaitlist))
	s.mux.HandleFunc("GET /api/v1/events/{event}/waitlist/mine", s.authed(buyer, s.myWaitlist))
	s.mux.HandleFunc("GET /api/v1/events/{event}/waitlist", s.authed(staff, s.eventWaitlist))
	s.mux.HandleFunc("DELETE /api/v1/waitlist/{entry}", s.authed(anyRole, s.leaveWaitlist))

	// Staff.
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds", s.authed(staff, s.eventHolds))
	s.mux.HandleFunc("GET /api/v1/events/{event}/occupancy", s.authed(staff, s.occupancy))
	// Box office blocks and unblocks too (their page has a small seat map
	// for it).
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/block", s.authed(staff, s.blockSeat))
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/unblock", s.authed(staff, s.unblockSeat))
	s.mux.HandleFunc("POST /api/v1/events/{event}/sales", s.authed(staff, s.sell))
	s.mux.HandleFunc("GET /api/v1/bookings", s.authed(staff, s.findBookings))
	s.mux.HandleFunc("GET /api/v1/bookings/{booking}", s.authed(anyRole, s.getBooking))
	s.mux.HandleFunc("POST /api/v1/bookings/{booking}/cancel", s.authed(staff, s.cancelBooking))
	s.mux.HandleFunc("GET /api/v1/events/{event}/house-seats", s.authed(staff, s.listHouseSeats))
	s.mux.HandleFunc("POST /api/v1/events/{event}/house-seats", s.authed(staff, s.createHouseSeats))
	s.mux.HandleFunc("POST /api/v1/house-seats/{allocation}/release", s.authed(staff, s.releaseHouseSeats))
	s.mux.HandleFunc("GET /api/v1/events/{event}/registry", s.authed(organizer, s.registry))
	s.mux.HandleFunc("POST /api/v1/events/{event}/registry/reconcile", s.authed(organizer, s.reconcile))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/seats.csv", s.authed(organizer, s.exportCSV(store.ExportSeats)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/bookings.csv", s.authed(organizer, s.exportCSV(store.ExportBookings)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/audit.csv", s.authed(organizer, s.exportCSV(store.ExportAudit)))

	// Integrators.
	s.mux.HandleFunc("GET /api/v1/openapi.json", s.public(s.openAPIDoc))
	s.mux.HandleFunc("POST /api/v1/api-keys", s.authed(organizer, s.createAPIKey))
	s.mux.HandleFunc("GET /api/v1/api-keys", s.authed(organizer, s.listAPIKeys))
	s.mux.HandleFunc("DELETE /api/v1/api-keys/{key}", s.authed(organizer, s.revokeAPIKey))
	s.mux.HandleFunc("POST /api/v1/webhooks", s.authed(organizer, s.createWebhook))
	s.mux.HandleFunc("GET /api/v1/webhooks", s.authed(organizer, s.listWebhooks))
	s.mux.HandleFunc("DELETE /api/v1/webhooks/{webhook}", s.authed(organizer, s.deleteWebhook))
	s.mux.HandleFunc("GET /api/v1/webhooks/{webhook}/deliveries", s.authed(organizer, s.listDeliveries))
	s.mux.HandleFunc("POST /api/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver", s.authed(organizer, s.redeliver))

	// Pages and the buyer's live socket.
	s.mux.Handle("GET /static/", s.assets)
	s.mux.HandleFunc("GET /{$}", s.home)
	s.mux.HandleFunc("GET /login", s.loginPage)
	s.mux.HandleFunc("GET /o/{org}/signup", s.signupPage)
	s.mux.HandleFunc("GET /events", s.page(anyRole, s.eventsPage))
	s.mux.HandleFunc("GET /e/{event}", s.page(anyRole, s.seatMapPage))
	s.mux.HandleFunc("GET /e/{event}/map", s.page(anyRole, s.venueFragment))
	s.mux.HandleFunc("GET /e/{event}/cart", s.page(anyRole, s.cartFragment))
	s.mux.HandleFunc("POST /e/{event}/seats/{seat}/toggle", s.page(anyRole, s.toggleSeat))
	s.mux.HandleFunc("POST /e/{event}/ga/{section}", s.page(anyRole, s.holdGAPlaces))
	s.mux.HandleFunc("POST /e/{event}/best", s.page(anyRole, s.bestSeats))
	s.mux.HandleFunc("DELETE /e/{event}/holds/{hold}", s.page(anyRole, s.releaseFromCart))
	s.mux.HandleFunc("POST /e/{event}/checkout", s.page(anyRole, s.checkoutCart))
	s.mux.HandleFunc("POST /e/{event}/pay", s.page(anyRole, s.pay))
	s.mux.HandleFunc("GET /e/{event}/waitlist", s.page(buyer, s.waitlistFragment))
	s.mux.HandleFunc("POST /e/{event}/waitlist", s.page(buyer, s.joinWaitlistForm))
	s.mux.HandleFunc("DELETE /e/{event}/waitlist/{entry}", s.page(buyer, s.leaveWaitlistForm))
	// The place in line is pushed on the seat map's live socket.
	s.hub.EnableWaitlist(live.WaitlistOptions{Source: s.deps.Engine, Renderer: livePanels{store: s.deps.Store.Waitlist}})
	s.mux.HandleFunc("GET /bookings/{booking}", s.page(buyer, s.bookingPage))
	s.mux.HandleFunc("GET /live/events/{event}", s.authed(anyRole, s.liveSocket(live.StreamSeats)))

	// Staff pages; turning them on also turns on the hub's staff streams.
	p := newStaffPages(s)
	s.hub.EnableStaff(live.StaffOptions{Renderer: p, Notice: p.releaseNotice})

	// Organizer.
	s.mux.HandleFunc("GET /admin/events", s.page(organizer, p.adminEventsPage))
	s.mux.HandleFunc("GET /admin/events/new", s.page(organizer, p.newEventPage))
	s.mux.HandleFunc("POST /admin/events", s.page(organizer, p.createEventForm))
	s.mux.HandleFunc("GET /admin/events/{event}/edit", s.page(organizer, p.editEventPage))
	s.mux.HandleFunc("POST /admin/events/{event}", s.page(organizer, p.updateEventForm))
	s.mux.HandleFunc("POST /admin/events/{event}/status", s.page(organizer, p.setEventStatus))
	s.mux.HandleFunc("POST /admin/events/{event}/delete", s.page(organizer, p.deleteEventForm))
	s.mux.HandleFunc("GET /admin/events/{event}", s.page(organizer, p.dashboardPage))
	s.mux.HandleFunc("GET /admin/events/{event}/occupancy", s.page(organizer, p.occupancyFragment))
	s.mux.HandleFunc("POST /admin/events/{event}/occupancy/verify", s.page(organizer, p.verifyFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/feed", s.page(organizer, p.feedFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/waitlist", s.page(organizer, p.staffWaitlistFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/registry", s.page(organizer, p.registryFragment))
	s.mux.HandleFunc("POST /admin/events/{event}/registry/reconcile", s.page(organizer, p.reconcileFragment))
	s.mux.HandleFunc("GET /admin/events/{event}/audit", s.page(organizer, p.auditPage))
	s.mux.HandleFunc("GET /admin/charts", s.page(organizer, s.chartsPage))
	s.mux.HandleFunc("GET /admin/charts/new", s.page(organizer, s.newChartPage))
	s.mux.HandleFunc("GET /admin/charts/{chart}", s.page(organizer, s.chartPage))
	s.mux.HandleFunc("POST /admin/charts/{chart}/delete", s.page(organizer, s.deleteChartForm))
	s.mux.HandleFunc("GET /admin/api-keys", s.page(organizer, s.apiKeysPage))
	s.mux.HandleFunc("POST /admin/api-keys", s.page(organizer, s.createAPIKeyForm))
	s.mux.HandleFunc("POST /admin/api-keys/{key}/revoke", s.page(organizer, s.revokeAPIKeyForm))
	s.mux.HandleFunc("GET /admin/webhooks", s.page(organizer, s.webhooksPage))
	s.mux.HandleFunc("POST /admin/webhooks", s.page(organizer, s.createWebhookForm))
	s.mux.HandleFunc("POST /admin/webhooks/{webhook}/delete", s.page(organizer, s.deleteWebhookForm))
	s.mux.HandleFunc("GET /admin/webhooks/{webhook}/deliveries", s.page(organizer, s.deliveriesPage))
	s.mux.HandleFunc("POST /admin/webhooks/{webhook}/deliveries/{delivery}/redeliver", s.page(organizer, s.redeliverForm))

	// Box office; organizers may use it too.
	s.mux.HandleFunc("GET /box-office/events/{event}", s.page(staff, p.boxOfficePage))
	s.mux.HandleFunc("POST /box-office/events/{event}/lookup", s.page(staff, p.lookupCustomer))
	s.mux.HandleFunc("GET /box-office/events/{event}/holds", s.page(staff, p.holdsFragment))
	s.mux.HandleFunc("GET /box-office/events/{event}/map", s.page(staff, p.boxMapFragment))
	s.mux.HandleFunc("POST /box-office/events/{event}/release", s.page(staff, p.releaseHolds))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/block", s.page(staff, p.boxBlock))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/unblock", s.page(staff, p.boxUnblock))
	s.mux.HandleFunc("POST /box-office/events/{event}/customer-holds", s.page(staff, p.customerHold))
	s.mux.HandleFunc("POST /box-office/events/{event}/customer-best", s.page(staff, p.customerBest))
	s.mux.HandleFunc("POST /box-office/events/{event}/sell", s.page(staff, p.sellHolds))
	s.mux.HandleFunc("POST /box-office/events/{event}/house-seats", s.page(staff, p.createHouse))
	s.mux.HandleFunc("POST /box-office/house-seats/{allocation}/release", s.page(staff, p.releaseHouse))
	s.mux.HandleFunc("GET /box-office/bookings/{booking}", s.page(staff, p.confirmationPage))
	s.mux.HandleFunc("POST /box-office/bookings/{booking}/cancel", s.page(staff, p.cancelTickets))

	// Their live sockets.
	s.mux.HandleFunc("GET /live/events/{event}/dashboard", p.authed(organizer, p.liveSocket(live.StreamDashboard)))
	s.mux.HandleFunc("GET /live/events/{event}/box-office", p.authed(staff, p.liveSocket(live.StreamBoxOffice)))
}

// opsRoutes lists the routes of the ops listener (see Ops): metrics,
// the probes again, and profiles.
func (s *Server) opsRoutes(mux *http.ServeMux, metrics http.Handler) {
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
