package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/web/httpx"
)

// Tickets: a buyer's own bookings, and the codes and admissions of a
// booking's tickets (docs/architecture.md#ticket-codes).

// TicketReads are the reads of a buyer's bookings and of admissions;
// *store.Bookings satisfies it.
type TicketReads interface {
	OfUser(ctx context.Context, org, user uuid.UUID, limit int) ([]store.UserBooking, error)
	CheckedIn(ctx context.Context, org uuid.UUID, tickets []uuid.UUID) (map[uuid.UUID]time.Time, error)
}

var _ TicketReads = (*store.Bookings)(nil)

// Tickets answers buyers' bookings with their tickets' codes.
type Tickets struct {
	reads TicketReads
	codes ticket.Signer
}

// myBookingJSON is one of the buyer's bookings in their list.
type myBookingJSON struct {
	ID          uuid.UUID `json:"id"`
	Reference   string    `json:"reference"`
	Status      string    `json:"status"`
	EventID     uuid.UUID `json:"event_id"`
	EventName   string    `json:"event_name"`
	Venue       string    `json:"venue,omitempty"`
	StartsAt    time.Time `json:"starts_at"`
	TimeZone    string    `json:"time_zone"`
	CreatedAt   time.Time `json:"created_at"`
	LiveTickets int       `json:"live_tickets"`
}

// MyBookingsLimit is how many bookings a buyer's list shows.
const MyBookingsLimit = 200

// Mine lists the buyer's own bookings, newest first.
func (h *Tickets) Mine(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "bookings", func(b store.UserBooking) myBookingJSON {
		return myBookingJSON{ID: b.ID, Reference: store.FormatReference(b.Reference), Status: b.Status, EventID: b.Event,
			EventName: b.EventName, Venue: b.Venue, StartsAt: b.StartsAt.UTC(), TimeZone: b.TimeZone,
			CreatedAt: b.CreatedAt.UTC(), LiveTickets: b.LiveTickets}
	})(h.reads.OfUser(r.Context(), a.Org, a.User, MyBookingsLimit))
}

// annotate adds each live ticket's code and each admitted ticket's time
// to a booking's answer.
func (h *Tickets) annotate(ctx context.Context, b store.Booking, out *BookingJSON) error {
	ids := make([]uuid.UUID, len(b.Tickets))
	for i, t := range b.Tickets {
		ids[i] = t.ID
	}
	in, err := h.reads.CheckedIn(ctx, b.OrgID, ids)
	if err != nil {
		return err
	}
	for i, t := range b.Tickets {
		if at, ok := in[t.ID]; ok {
			out.Tickets[i].CheckedInAt = &at
		}
		if t.Cancelled() {
			continue
		}
		code, err := h.codes.Code(ctx, ticket.Claims{Org: b.OrgID, Event: b.EventID, Ticket: t.ID, Seat: t.SeatID})
		if err != nil {
			return err
		}
		out.Tickets[i].Code = code
	}
	return nil
}
