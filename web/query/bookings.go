package query

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// BookingCore reads a booking as the actor may (any of the organization's
// for staff, a buyer's own); *hold.BoxOffice satisfies it.
type BookingCore interface {
	Booking(ctx context.Context, a hold.Actor, id uuid.UUID) (store.Booking, error)
}

// Bookings reads the booking a request names, for the JSON answer and the
// pages that show it.
type Bookings struct {
	core   BookingCore
	events EventStore
}

// NewBookings returns the reads of bookings through core, with their
// events from events.
func NewBookings(core BookingCore, events EventStore) *Bookings {
	return &Bookings{core: core, events: events}
}

// FromPath reads the {booking} of the request's path.
func (q *Bookings) FromPath(r *http.Request, a hold.Actor) (store.Booking, error) {
	id, err := httpx.PathID(r, "booking")
	if err != nil {
		return store.Booking{}, err
	}
	return q.core.Booking(r.Context(), a, id)
}

// WithEvent reads the {booking} of the request's path and its event.
func (q *Bookings) WithEvent(r *http.Request, a hold.Actor) (store.Booking, store.Event, error) {
	b, err := q.FromPath(r, a)
	if err != nil {
		return b, store.Event{}, err
	}
	ev, err := q.events.Event(r.Context(), a.Org, b.EventID)
	return b, ev, err
}
