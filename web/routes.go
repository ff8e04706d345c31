package web

import (
	"net/http"
	"net/http/pprof"

	"seatd/internal/store"
	"seatd/web/live"
	"seatd/web/session"
)

// routes lists every route of the public listener in one place, each
// behind its role guard (docs/architecture.md#roles-and-tenancy): holds,
// checkout and purchase are the buyer's; hold lists and occupancy are
// staff's; blocking and the registry are the organizer's.
func (s *Server) routes() {
	authed, page, public := s.guard.Authed, s.guard.Page, s.guard.Public
	const buyer, staff, organizer, anyRole = session.Buyer, session.Staff, session.Organizer, session.AnyRole
	const scanners = session.Scanners   // door staff, and staff standing in for them
	h, p, st := s.api, s.pages, s.staff // the JSON API, the buyer pages, the staff pages
	// While an event's waiting room is on, the map, the hold routes and
	// the live socket let through staff and admitted visitors only
	// (web/queue): pages send the others to the line (303), the rest
	// answer 429 in_queue. Releasing, checking out and paying are not
	// gated: whoever holds seats may finish.
	mapPage, admitted := s.gate.Page, s.gate.API
	// Reads that answer every seat of an event are limited per reader and
	// per network (readlimit.go).
	wholeEvent := s.wholeEvent

	// Probes, where load balancers look; metrics and profiles are on the
	// ops listener only (Ops, ops.go).
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.publicReadyz)

	// Accounts.
	s.mux.HandleFunc("POST /login", public(h.Accounts.Login))
	s.mux.HandleFunc("POST /o/{org}/signup", public(h.Accounts.Signup))
	s.mux.HandleFunc("POST /logout", public(h.Accounts.Logout))
	s.mux.HandleFunc("GET /api/v1/me", authed(anyRole, h.Accounts.Me))
	// Emailed links (docs/api.md#accounts): verification and password
	// reset; their pages only show a form that posts here.
	s.mux.HandleFunc("POST /verify-email", public(h.Accounts.VerifyEmail))
	s.mux.HandleFunc("POST /verify-email/resend", authed(anyRole, h.Accounts.ResendVerification))
	s.mux.HandleFunc("POST /password-reset", public(h.Accounts.RequestReset))
	s.mux.HandleFunc("POST /password-reset/confirm", public(h.Accounts.ConfirmReset))
	// Devices: the signed-in user's sessions.
	s.mux.HandleFunc("GET /api/v1/me/sessions", authed(anyRole|session.Door, h.Devices.List))
	s.mux.HandleFunc("DELETE /api/v1/me/sessions/{id}", authed(anyRole|session.Door, h.Devices.End))
	s.mux.HandleFunc("POST /api/v1/me/sessions/revoke-others", authed(anyRole|session.Door, h.Devices.EndOthers))
	// The organization's settings (its sign-up policy).
	s.mux.HandleFunc("GET /api/v1/org", authed(organizer, h.Org.Get))
	s.mux.HandleFunc("PATCH /api/v1/org", authed(organizer, h.Org.Update))
	// Invitations (docs/api.md#invitations): the organizers invite an
	// address; the link's page posts the token and a password here.
	s.mux.HandleFunc("POST /api/v1/invitations", authed(organizer, h.Invitations.Invite))
	s.mux.HandleFunc("GET /api/v1/invitations", authed(organizer, h.Invitations.List))
	s.mux.HandleFunc("DELETE /api/v1/invitations/{invitation}", authed(organizer, h.Invitations.Revoke))
	s.mux.HandleFunc("POST /invitations/accept", public(h.Accounts.AcceptInvitation))

	// Events and seats.
	s.mux.HandleFunc("GET /api/v1/events", authed(anyRole, h.Events.List))
	s.mux.HandleFunc("GET /api/v1/events/{event}", authed(anyRole, h.Events.Get))
	s.mux.HandleFunc("GET /api/v1/events/{event}/seats", authed(anyRole, wholeEvent(h.Events.Seats)))
	s.mux.HandleFunc("POST /api/v1/events", authed(organizer, h.Events.Create))
	s.mux.HandleFunc("PATCH /api/v1/events/{event}", authed(organizer, h.Events.Update))
	s.mux.HandleFunc("DELETE /api/v1/events/{event}", authed(organizer, h.Events.Delete))

	// Venue charts (docs/architecture.md#charts-and-events); the organizer's alone.
	s.mux.HandleFunc("POST /api/v1/charts", authed(organizer, h.Charts.Create))
	s.mux.HandleFunc("GET /api/v1/charts", authed(organizer, h.Charts.List))
	s.mux.HandleFunc("GET /api/v1/charts/{chart}", authed(organizer, h.Charts.Get))
	s.mux.HandleFunc("PUT /api/v1/charts/{chart}", authed(organizer, h.Charts.Update))
	s.mux.HandleFunc("DELETE /api/v1/charts/{chart}", authed(organizer, h.Charts.Delete))

	// Buying.
	// Staff hold here too, for a named customer only (api.Holds.Create).
	s.mux.HandleFunc("POST /api/v1/events/{event}/holds", authed(anyRole, admitted(h.Holds.Create)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds/mine", authed(buyer, h.Holds.Mine))
	s.mux.HandleFunc("DELETE /api/v1/holds/{hold}", authed(anyRole, h.Holds.Release))
	s.mux.HandleFunc("POST /api/v1/events/{event}/checkout", authed(buyer, h.Holds.Checkout))
	s.mux.HandleFunc("POST /api/v1/events/{event}/purchase", authed(buyer, h.Holds.Purchase))
	// Payments (docs/payments.md): the buyer starts one for their holds;
	// only the provider's signed webhook books it. The webhook is a
	// machine route (Server.machine): no session is loaded or saved and no
	// cross-origin check runs: it carries no cookie, its signature is checked.
	s.mux.HandleFunc("POST /api/v1/events/{event}/payments", authed(buyer, h.Payments.Start))
	s.mux.HandleFunc("GET /api/v1/payments/{payment}", authed(anyRole, h.Payments.Get))
	s.machine.HandleFunc("POST /webhooks/stripe", public(h.Payments.Webhook))
	// The waitlist (docs/architecture.md#the-waitlist): buyers join and
	// leave; staff see the line and may take anyone out of it.
	s.mux.HandleFunc("POST /api/v1/events/{event}/waitlist", authed(buyer, h.Waitlist.Join))
	s.mux.HandleFunc("GET /api/v1/events/{event}/waitlist/mine", authed(buyer, h.Waitlist.Mine))
	s.mux.HandleFunc("GET /api/v1/events/{event}/waitlist", authed(staff, h.Waitlist.Line))
	s.mux.HandleFunc("DELETE /api/v1/waitlist/{entry}", authed(anyRole, h.Waitlist.Leave))
	// The waiting room (docs/waiting-room.md): a visitor's place in line.
	s.mux.HandleFunc("POST /api/v1/events/{event}/queue", authed(anyRole, h.Queue.Join))
	s.mux.HandleFunc("GET /api/v1/events/{event}/queue/mine", authed(anyRole, h.Queue.Mine))

	// Staff.
	s.mux.HandleFunc("GET /api/v1/events/{event}/holds", authed(staff, h.Holds.EventHolds))
	s.mux.HandleFunc("GET /api/v1/events/{event}/occupancy", authed(staff, h.Registry.Occupancy))
	// Box office blocks and unblocks too (docs/box-office.md: their page
	// has a small seat map for it).
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/block", authed(staff, h.Events.Block))
	s.mux.HandleFunc("POST /api/v1/events/{event}/seats/{seat}/unblock", authed(staff, h.Events.Unblock))
	s.mux.HandleFunc("POST /api/v1/events/{event}/sales", authed(staff, h.BoxOffice.Sell))
	s.mux.HandleFunc("GET /api/v1/bookings", authed(staff, h.BoxOffice.Find))
	s.mux.HandleFunc("GET /api/v1/bookings/{booking}", authed(anyRole, h.BoxOffice.Booking))
	s.mux.HandleFunc("POST /api/v1/bookings/{booking}/cancel", authed(staff, h.BoxOffice.Cancel))
	s.mux.HandleFunc("GET /api/v1/events/{event}/house-seats", authed(staff, h.BoxOffice.HouseSeats))
	s.mux.HandleFunc("POST /api/v1/events/{event}/house-seats", authed(staff, h.BoxOffice.CreateHouseSeats))
	s.mux.HandleFunc("POST /api/v1/house-seats/{allocation}/release", authed(staff, h.BoxOffice.ReleaseHouseSeats))
	s.mux.HandleFunc("GET /api/v1/events/{event}/registry", authed(organizer, h.Registry.Status))
	s.mux.HandleFunc("POST /api/v1/events/{event}/registry/reconcile", authed(organizer, h.Registry.Reconcile))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/seats.csv", authed(organizer, h.Exports.CSV(store.ExportSeats)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/bookings.csv", authed(organizer, h.Exports.CSV(store.ExportBookings)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/audit.csv", authed(organizer, h.Exports.CSV(store.ExportAudit)))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/payments.csv", authed(organizer, h.Payments.CSV))
	s.mux.HandleFunc("GET /api/v1/events/{event}/payments", authed(staff, h.Payments.List))
	s.mux.HandleFunc("GET /api/v1/events/{event}/payments/summary", authed(staff, h.Payments.Summary))
	s.mux.HandleFunc("GET /api/v1/refunds/failed", authed(staff, h.Payments.FailedRefunds))
	s.mux.HandleFunc("POST /api/v1/refunds/{refund}/retry", authed(staff, h.Payments.RetryRefund))

	// Tickets and the door (docs/architecture.md#ticket-codes, #check-ins).
	s.mux.HandleFunc("GET /api/v1/me/bookings", authed(buyer, h.Tickets.Mine))
	s.mux.HandleFunc("POST /api/v1/me/bookings/{booking}/cancel", authed(buyer, h.BoxOffice.CancelMine))
	s.mux.HandleFunc("POST /api/v1/events/{event}/checkins", authed(scanners, h.Door.Checkin))
	s.mux.HandleFunc("POST /api/v1/events/{event}/checkins/sync", authed(scanners, h.Door.Sync))
	s.mux.HandleFunc("GET /api/v1/events/{event}/checkins/key", authed(scanners, h.Door.Key))
	s.mux.HandleFunc("GET /api/v1/events/{event}/checkins", authed(scanners, h.Door.Counts))
	s.mux.HandleFunc("GET /api/v1/events/{event}/exports/checkins.csv", authed(organizer, h.Door.CSV))

	// Integrators.
	s.mux.HandleFunc("GET /api/v1/openapi.json", public(s.openAPIDoc))
	s.mux.HandleFunc("POST /api/v1/api-keys", authed(organizer, h.Keys.Create))
	s.mux.HandleFunc("GET /api/v1/api-keys", authed(organizer, h.Keys.List))
	s.mux.HandleFunc("DELETE /api/v1/api-keys/{key}", authed(organizer, h.Keys.Revoke))
	s.mux.HandleFunc("POST /api/v1/webhooks", authed(organizer, h.Webhooks.Create))
	s.mux.HandleFunc("GET /api/v1/webhooks", authed(organizer, h.Webhooks.List))
	s.mux.HandleFunc("DELETE /api/v1/webhooks/{webhook}", authed(organizer, h.Webhooks.Delete))
	s.mux.HandleFunc("POST /api/v1/webhooks/{webhook}/rotate-secret", authed(organizer, h.Webhooks.RotateSecret))
	s.mux.HandleFunc("GET /api/v1/webhooks/{webhook}/deliveries", authed(organizer, h.Webhooks.Deliveries))
	s.mux.HandleFunc("POST /api/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver", authed(organizer, h.Webhooks.Redeliver))

	// Pages and the buyer's live socket.
	s.mux.Handle("GET /static/", s.assets)
	s.mux.HandleFunc("GET /{$}", p.SignIn.Home)
	s.mux.HandleFunc("GET /login", p.SignIn.Login)
	s.mux.HandleFunc("GET /o/{org}/signup", p.SignIn.Signup)
	s.mux.HandleFunc("GET /events", page(anyRole, p.Events.List))
	s.mux.HandleFunc("GET /e/{event}", page(anyRole, wholeEvent(mapPage(p.SeatMap.Page))))
	s.mux.HandleFunc("GET /e/{event}/queue", page(anyRole, p.Queue.Page))
	s.mux.HandleFunc("GET /e/{event}/map", page(anyRole, wholeEvent(admitted(p.SeatMap.Venue))))
	s.mux.HandleFunc("GET /e/{event}/cart", page(anyRole, p.Cart.Fragment))
	s.mux.HandleFunc("POST /e/{event}/seats/{seat}/toggle", page(anyRole, admitted(p.Cart.Toggle)))
	s.mux.HandleFunc("POST /e/{event}/ga/{section}", page(anyRole, admitted(p.Cart.Places)))
	s.mux.HandleFunc("POST /e/{event}/best", page(anyRole, admitted(p.Cart.Best)))
	s.mux.HandleFunc("DELETE /e/{event}/holds/{hold}", page(anyRole, p.Cart.Release))
	s.mux.HandleFunc("POST /e/{event}/checkout", page(anyRole, p.Cart.Checkout))
	s.mux.HandleFunc("POST /e/{event}/pay", page(anyRole, p.Cart.Pay))
	s.mux.HandleFunc("GET /payments/{payment}", page(buyer, p.Payment.Page))
	s.mux.HandleFunc("POST /payments/{payment}/card", page(buyer, p.Payment.Card))
	s.mux.HandleFunc("GET /payments/{payment}/processing", page(buyer, p.Payment.Wait))
	s.mux.HandleFunc("GET /e/{event}/waitlist", page(buyer, p.Waitlist.Fragment))
	s.mux.HandleFunc("POST /e/{event}/waitlist", page(buyer, p.Waitlist.Join))
	s.mux.HandleFunc("DELETE /e/{event}/waitlist/{entry}", page(buyer, p.Waitlist.Leave))
	s.mux.HandleFunc("GET /bookings/{booking}", page(buyer, p.Booking.Page))
	s.mux.HandleFunc("GET /bookings/{booking}/tickets.pdf", page(buyer, p.Booking.PDF))
	s.mux.HandleFunc("POST /bookings/{booking}/cancel", page(buyer, p.Booking.Cancel))
	s.mux.HandleFunc("GET /me/tickets", page(buyer, p.MyTickets.Page))
	s.mux.HandleFunc("GET /verify-email", p.Account.VerifyEmail)
	s.mux.HandleFunc("GET /password-reset", p.Account.ResetRequest)
	s.mux.HandleFunc("GET /password-reset/confirm", p.Account.ResetConfirm)
	s.mux.HandleFunc("GET /invitations/accept", p.Account.Invitation)
	s.mux.HandleFunc("GET /me/devices", page(anyRole|session.Door, p.Account.Devices))
	s.mux.HandleFunc("POST /me/devices/{id}/end", page(anyRole|session.Door, p.Account.EndDevice))
	s.mux.HandleFunc("POST /me/devices/end-others", page(anyRole|session.Door, p.Account.EndOthers))
	s.mux.HandleFunc("GET /door", page(scanners, st.Door.Events))
	s.mux.HandleFunc("GET /door/e/{event}", page(scanners, st.Door.Scanner))
	s.mux.HandleFunc("GET /live/events/{event}", authed(anyRole, admitted(s.liveSocket(live.StreamSeats))))

	// Organizer.
	s.mux.HandleFunc("GET /admin/events", page(organizer, st.Events.List))
	s.mux.HandleFunc("GET /admin/events/new", page(organizer, st.Events.New))
	s.mux.HandleFunc("POST /admin/events", page(organizer, st.Events.Create))
	s.mux.HandleFunc("GET /admin/events/{event}/edit", page(organizer, st.Events.Edit))
	s.mux.HandleFunc("POST /admin/events/{event}", page(organizer, st.Events.Update))
	s.mux.HandleFunc("POST /admin/events/{event}/status", page(organizer, st.Events.SetStatus))
	s.mux.HandleFunc("POST /admin/events/{event}/delete", page(organizer, st.Events.Delete))
	s.mux.HandleFunc("GET /admin/events/{event}", page(organizer, st.Dashboard.Page))
	s.mux.HandleFunc("GET /admin/events/{event}/occupancy", page(organizer, st.Dashboard.Occupancy))
	s.mux.HandleFunc("POST /admin/events/{event}/occupancy/verify", page(organizer, st.Dashboard.Verify))
	s.mux.HandleFunc("GET /admin/events/{event}/feed", page(organizer, st.Dashboard.Feed))
	s.mux.HandleFunc("GET /admin/events/{event}/door", page(organizer, st.Dashboard.Door))
	s.mux.HandleFunc("GET /admin/events/{event}/waitlist", page(organizer, st.Dashboard.Waitlist))
	s.mux.HandleFunc("GET /admin/events/{event}/queue", page(organizer, st.Queue.Panel))
	s.mux.HandleFunc("POST /admin/events/{event}/queue/rate", page(organizer, st.Queue.SetRate))
	s.mux.HandleFunc("GET /admin/events/{event}/registry", page(organizer, st.Dashboard.Registry))
	s.mux.HandleFunc("POST /admin/events/{event}/registry/reconcile", page(organizer, st.Dashboard.Reconcile))
	s.mux.HandleFunc("GET /admin/events/{event}/audit", page(organizer, st.Audit.Page))
	s.mux.HandleFunc("GET /admin/charts", page(organizer, st.Charts.List))
	s.mux.HandleFunc("GET /admin/charts/new", page(organizer, st.Charts.New))
	s.mux.HandleFunc("GET /admin/charts/{chart}", page(organizer, st.Charts.Edit))
	s.mux.HandleFunc("POST /admin/charts/{chart}/delete", page(organizer, st.Charts.Delete))
	s.mux.HandleFunc("GET /admin/api-keys", page(organizer, st.Keys.Page))
	s.mux.HandleFunc("POST /admin/api-keys", page(organizer, st.Keys.Create))
	s.mux.HandleFunc("POST /admin/api-keys/{key}/revoke", page(organizer, st.Keys.Revoke))
	s.mux.HandleFunc("GET /admin/settings", page(organizer, st.Settings.Page))
	s.mux.HandleFunc("POST /admin/settings", page(organizer, st.Settings.Save))
	s.mux.HandleFunc("GET /admin/invitations", page(organizer, st.Invitations.Page))
	s.mux.HandleFunc("POST /admin/invitations", page(organizer, st.Invitations.Invite))
	s.mux.HandleFunc("POST /admin/invitations/{invitation}/revoke", page(organizer, st.Invitations.Revoke))
	s.mux.HandleFunc("GET /admin/webhooks", page(organizer, st.Webhooks.Page))
	s.mux.HandleFunc("POST /admin/webhooks", page(organizer, st.Webhooks.Create))
	s.mux.HandleFunc("POST /admin/webhooks/{webhook}/delete", page(organizer, st.Webhooks.Delete))
	s.mux.HandleFunc("POST /admin/webhooks/{webhook}/rotate-secret", page(organizer, st.Webhooks.RotateSecret))
	s.mux.HandleFunc("GET /admin/webhooks/{webhook}/deliveries", page(organizer, st.Webhooks.Deliveries))
	s.mux.HandleFunc("POST /admin/webhooks/{webhook}/deliveries/{delivery}/redeliver", page(organizer, st.Webhooks.Redeliver))

	// Box office; organizers may use it too.
	s.mux.HandleFunc("GET /box-office/events/{event}", page(staff, st.BoxOffice.Page))
	s.mux.HandleFunc("POST /box-office/events/{event}/lookup", page(staff, st.BoxOffice.Lookup))
	s.mux.HandleFunc("GET /box-office/events/{event}/holds", page(staff, st.BoxOffice.Holds))
	s.mux.HandleFunc("GET /box-office/events/{event}/map", page(staff, wholeEvent(st.BoxOffice.Map)))
	s.mux.HandleFunc("POST /box-office/events/{event}/release", page(staff, st.BoxOffice.Release))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/block", page(staff, st.BoxOffice.Block))
	s.mux.HandleFunc("POST /box-office/events/{event}/seats/{seat}/unblock", page(staff, st.BoxOffice.Unblock))
	s.mux.HandleFunc("POST /box-office/events/{event}/customer-holds", page(staff, st.Counter.CustomerHold))
	s.mux.HandleFunc("POST /box-office/events/{event}/customer-best", page(staff, st.Counter.CustomerBest))
	s.mux.HandleFunc("POST /box-office/events/{event}/sell", page(staff, st.Counter.Sell))
	s.mux.HandleFunc("POST /box-office/events/{event}/house-seats", page(staff, st.Counter.CreateHouse))
	s.mux.HandleFunc("POST /box-office/house-seats/{allocation}/release", page(staff, st.Counter.ReleaseHouse))
	s.mux.HandleFunc("GET /box-office/bookings/{booking}", page(staff, st.Counter.Confirmation))
	s.mux.HandleFunc("GET /admin/events/{event}/attendees", page(staff, st.Attendees.Page))
	s.mux.HandleFunc("POST /box-office/bookings/{booking}/cancel", page(staff, st.Counter.Cancel))
	s.mux.HandleFunc("GET /box-office/refunds", page(staff, st.Refunds.Page))
	s.mux.HandleFunc("POST /box-office/refunds/{refund}/retry", page(staff, st.Refunds.Retry))

	// Their live sockets.
	s.mux.HandleFunc("GET /live/events/{event}/dashboard", authed(organizer, s.liveSocket(live.StreamDashboard)))
	s.mux.HandleFunc("GET /live/events/{event}/box-office", authed(staff, s.liveSocket(live.StreamBoxOffice)))
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
