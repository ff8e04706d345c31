// Package api is seatd's JSON API (docs/api.md; web/openapi.json
// describes it): one handler type per feature — accounts, events and
// their seats, charts, holds, the waitlist, the box office, occupancy and
// the registry, exports, API keys and webhooks — each with the small
// interfaces of the calls it makes declared beside it. A handler decodes,
// calls the hold core (internal/hold) or a read, and answers JSON;
// web/routes.go routes to it behind its role guard.
package api

import (
	"log/slog"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/internal/gate"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/internal/webhook"
	"seatd/web/httpx"
	"seatd/web/query"
	"seatd/web/ratelimit"
	"seatd/web/render"
	"seatd/web/session"
)

// Deps are the parts the handlers are built from.
type Deps struct {
	Log     *slog.Logger
	Decoder *httpx.Decoder
	Limits  *ratelimit.Limiter
	Lockout *ratelimit.Lockout
	// Devices are the device cookies the lockout trusts.
	Devices  *ratelimit.DeviceCookies
	Sessions *session.Sessions
	// Render shows the sign-in and sign-up forms again after a refused form
	// post.
	Render *render.Pages

	// The hold core's jobs.
	Holds     *hold.Holds
	BoxOffice *hold.BoxOffice
	Events    *hold.Events
	Waitlist  *hold.Waitlist
	Monitor   *hold.Monitor
	// Payments is the payment flow; TestCheckout says the test provider
	// takes them (its card page is the buyer's redirect_url).
	Payments     *hold.Payments
	TestCheckout bool

	// Uploads bounds the chart uploads read at once (SEATD_CHART_UPLOADS).
	Uploads *gate.Gate

	Auth      Authenticator
	Keys      *auth.APIKeys
	Endpoints *webhook.Endpoints

	// The stores read beside the core.
	Accounts   *store.Accounts
	Charts     *store.Charts
	EventStore *store.Events
	Audit      *store.Audit
	Webhooks   *store.Webhooks

	// The reads and checks the API shares with the pages.
	Visible    *query.Events
	Bookings   *query.Bookings
	Deliveries *query.Deliveries
	Registry   *RegistryFlights

	// The door and tickets.
	Door         DoorCore
	Tickets      ticket.Signer
	BookingStore TicketReads
	// Queue is the waiting room's gate (web/queue).
	Queue QueueLine
}

// API is the JSON handlers, one field per feature.
type API struct {
	Accounts  *Accounts
	Events    *Events
	Charts    *Charts
	Holds     *Holds
	Waitlist  *Waitlist
	BoxOffice *BoxOffice
	Registry  *Registry
	Exports   *Exports
	Keys      *Keys
	Webhooks  *Webhooks
	Door      *Door
	Tickets   *Tickets
	Devices   *Devices
	Org       *Org
	// Invitations are the organization's invitations to sign up.
	Invitations *Invitations
	Queue       *Queue
	Payments    *Payments
}

// New builds the handlers.
func New(d Deps) *API {
	tickets := &Tickets{reads: d.BookingStore, codes: d.Tickets}
	pay := &Payments{dec: d.Decoder, core: d.Payments, log: d.Log}
	if d.TestCheckout {
		pay.checkout = PaymentPage
	}
	return &API{
		Accounts: &Accounts{dec: d.Decoder, limits: d.Limits, lockout: d.Lockout, devices: d.Devices, auth: d.Auth, reads: d.Accounts,
			sessions: d.Sessions, pages: d.Render},
		Events:      &Events{dec: d.Decoder, core: d.Events, visible: d.Visible, blocker: d.Holds, seats: newSeatsCache(seatsCacheBytes)},
		Charts:      &Charts{store: d.Charts, uploads: d.Uploads},
		Holds:       &Holds{dec: d.Decoder, limits: d.Limits, gate: d.Sessions, core: d.Holds, visible: d.Visible, pages: d.Audit},
		Waitlist:    &Waitlist{dec: d.Decoder, core: d.Waitlist},
		BoxOffice:   &BoxOffice{dec: d.Decoder, core: d.BoxOffice, cancels: d.Payments, bookings: d.Bookings, tickets: tickets},
		Registry:    &Registry{dec: d.Decoder, occupancy: d.Monitor, checks: d.Registry},
		Exports:     &Exports{store: d.EventStore, log: d.Log},
		Keys:        &Keys{dec: d.Decoder, core: d.Keys, list: d.Accounts},
		Webhooks:    &Webhooks{dec: d.Decoder, endpoints: d.Endpoints, store: d.Webhooks, deliveries: d.Deliveries},
		Door:        &Door{dec: d.Decoder, core: d.Door},
		Tickets:     tickets,
		Devices:     &Devices{dec: d.Decoder, sessions: d.Sessions},
		Org:         &Org{dec: d.Decoder, reads: d.Accounts, policy: d.Auth},
		Invitations: &Invitations{dec: d.Decoder, core: d.Auth, reads: d.Accounts, limits: d.Limits},
		Queue:       &Queue{dec: d.Decoder, line: d.Queue},
		Payments:    pay,
	}
}

// idAndNoInput reads a request that takes no input: the id of path
// segment name, and a body that is empty or an empty JSON object.
func idAndNoInput(dec *httpx.Decoder, w http.ResponseWriter, r *http.Request, name string) (uuid.UUID, error) {
	id, err := httpx.PathID(r, name)
	if err != nil {
		return id, err
	}
	var in struct{}
	return id, dec.OptionalJSON(w, r, &in)
}
