package pages

import (
	"cmp"
	"net/http"

	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
)

// BookingReads reads the booking a request names with its event;
// *query.Bookings satisfies it.
type BookingReads interface {
	WithEvent(r *http.Request, a hold.Actor) (store.Booking, store.Event, error)
}

// Booking is the buyer's booking page, shown after paying.
type Booking struct {
	render   Renderer
	bookings BookingReads
}

// Page shows one of the buyer's bookings with its tickets.
func (p *Booking) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, ev, err := p.bookings.WithEvent(r, a)
	if err != nil {
		return err
	}
	out := views.Booking{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
		CancelReason: b.CancelReason, EventName: ev.Name, CreatedAt: b.CreatedAt}
	for _, t := range b.Tickets {
		out.Tickets = append(out.Tickets, views.Ticket{ID: t.ID.String(), Label: cmp.Or(t.Place, "Seat "+t.Seat), Cancelled: t.Cancelled(),
			Price: money.Format(t.PriceMinor, t.Currency)})
	}
	p.render.Render(w, r, http.StatusOK, views.BookingPage(p.render.Meta(r, "Booking"), out))
	return nil
}
