// Package pages is the buyer's side of the site: sign-in and sign-up
// pages, the events list, the seat map with its cart (seat clicks, best
// seats, standing places, checkout and payment), the waitlist panel and
// the booking page, and what the live hub pushes to a buyer's map (seat
// and place frames, waitlist panels). Handlers decode a form, call the
// hold core and render a templ component (views); refusals a buyer can
// act on are shown in the page, not as error pages.
package pages

import (
	"context"
	"net/http"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/views"
	"seatd/web/query"
	"seatd/web/ratelimit"
	"seatd/web/render"
	"seatd/web/session"
)

// Renderer renders pages, fragments and error pages; *render.Pages
// satisfies it.
type Renderer interface {
	Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component)
	Meta(r *http.Request, title string) views.Page
	Error(w http.ResponseWriter, r *http.Request, err error)
}

// VisibleEvents reads the events the actor may see; *query.Events
// satisfies it.
type VisibleEvents interface {
	Event(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Event, error)
	List(ctx context.Context, a hold.Actor) ([]store.Event, error)
}

// Seats is what the map and its frames read of an event's seats from the
// hold core's cache; *hold.Events satisfies it.
type Seats interface {
	SeatViews(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Section, []hold.SeatView, error)
	SeatLayout(org, event, seat uuid.UUID) (hold.SeatView, bool)
	SeatLabel(ctx context.Context, a hold.Actor, event, seat uuid.UUID) string
	GASections(ctx context.Context, a hold.Actor, event uuid.UUID) ([]hold.GASection, error)
	Prices(ctx context.Context, a hold.Actor, event uuid.UUID) (map[string]store.Category, error)
}

// Deps are the parts the buyer pages are built from.
type Deps struct {
	Cfg      config.Config
	Render   *render.Pages
	Limits   *ratelimit.Limiter
	Sessions *session.Sessions
	Holds    *hold.Holds
	Events   *hold.Events
	Waitlist *hold.Waitlist
	Accounts *store.Accounts
	// Invites reads the invitation a link names, for its page.
	Invites InvitationReads
	// WaitlistStore reads the entries of the panels the live hub pushes.
	WaitlistStore *store.Waitlist
	Visible       *query.Events
	// The tickets: booking details, codes, the buyer's list.
	Details    BookingDetails
	Codes      ticket.Signer
	MyBookings MyBookings
	// Queue is the waiting room's gate (web/queue).
	Queue QueueLine
	// Payments is the payment flow; TestPayments the embedded test
	// provider (nil with Stripe, whose publishable key is in Cfg).
	Payments     *hold.Payments
	TestPayments *payment.TestProvider
}

// Pages is the buyer pages' handlers, and the renderers the live hub
// calls for buyers' maps.
type Pages struct {
	SignIn   *SignIn
	Events   *Events
	SeatMap  *SeatMap
	Cart     *Cart
	Waitlist *Waitlist
	Booking  *Booking
	// MyTickets is the buyer's list of their bookings.
	MyTickets *MyTickets
	// Account is the emailed links' pages and the devices page.
	Account *Account
	// Payment pays a payment and waits for its booking.
	Payment *Payment
	// Panels renders buyers' waitlist panels (half of
	// live.WaitlistRenderer; the dashboard's panel is web/staff's).
	Panels *WaitlistPanels
	// Queue is the waiting-room page.
	Queue *Queue
}

// New builds the buyer pages.
func New(d Deps) *Pages {
	pay := &Payment{render: d.Render, pays: d.Payments, stripe: d.Cfg.StripePublishableKey, flash: d.Sessions,
		visible: d.Visible}
	if d.TestPayments != nil {
		pay.card = d.TestPayments
	}
	cart := &Cart{render: d.Render, holds: d.Holds, seats: d.Events, limits: d.Limits, gate: d.Sessions, flash: d.Sessions,
		maxSeats: d.Cfg.MaxSeatsPerRequest, maxExtensions: d.Cfg.MaxExtensions, payment: pay}
	return &Pages{
		SignIn:   &SignIn{render: d.Render, orgs: d.Accounts},
		Events:   &Events{render: d.Render, visible: d.Visible},
		SeatMap:  &SeatMap{render: d.Render, visible: d.Visible, seats: d.Events, cart: cart, maxSeats: d.Cfg.MaxSeatsPerRequest},
		Cart:     cart,
		Waitlist: &Waitlist{render: d.Render, core: d.Waitlist},
		Booking: &Booking{render: d.Render, details: d.Details, codes: d.Codes, cancels: d.Payments,
			flash: d.Sessions},
		MyTickets: &MyTickets{render: d.Render, mine: d.MyBookings},
		Account:   &Account{render: d.Render, sessions: d.Sessions, invites: d.Invites},
		Payment:   pay,
		Panels:    &WaitlistPanels{store: d.WaitlistStore},
		Queue:     &Queue{render: d.Render, visible: d.Visible, line: d.Queue},
	}
}
