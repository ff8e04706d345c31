package pages

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/views"
	"seatd/web/httpx"
)

// BookingReads reads the booking a request names with its event;
// *query.Bookings satisfies it.
type BookingReads interface {
	WithEvent(r *http.Request, a hold.Actor) (store.Booking, store.Event, error)
}

// BookingDetails reads a booking as its tickets show it;
// *store.BookingMail satisfies it.
type BookingDetails interface {
	Detail(ctx context.Context, org, booking uuid.UUID) (store.BookingDetail, error)
}

// BuyerCancels cancels a buyer's own paid booking, refunded;
// *hold.Payments satisfies it.
type BuyerCancels interface {
	CancelMine(ctx context.Context, a hold.Actor, booking uuid.UUID) (store.Booking, *store.Refund, error)
}

// Booking is the buyer's booking page, shown after paying, with each
// live ticket's QR code, and the tickets as a PDF.
type Booking struct {
	render   Renderer
	bookings BookingReads
	details  BookingDetails
	codes    ticket.Signer
	cancels  BuyerCancels
	flash    Flash
}

// cancelUntil is when the buyer's own cancellation of b closes, "" when
// they cannot cancel it (not paid online, nothing live, the event does
// not allow it, or past its cutoff).
func cancelUntil(b store.Booking, ev store.Event) string {
	if b.PaymentID == uuid.Nil || b.Status == store.BookingCancelled || ev.BuyerCancelHours == nil {
		return ""
	}
	cutoff := ev.StartsAt.Add(-time.Duration(*ev.BuyerCancelHours) * time.Hour)
	if !time.Now().Before(cutoff) {
		return ""
	}
	return ticket.Event{StartsAt: cutoff, TimeZone: ev.TimeZone}.When()
}

// Cancel cancels the buyer's own paid booking (a form post), refunded
// through the payment provider, and shows the booking again with what
// happened.
func (p *Booking) Cancel(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "booking")
	if err != nil {
		return err
	}
	if _, err := httpx.Form(w, r); err != nil {
		return err
	}
	_, refund, err := p.cancels.CancelMine(r.Context(), a, id)
	switch {
	case apperr.CodeOf(err) == apperr.Conflict:
		p.flash.Flash(r.Context(), httpx.Message(err))
	case err != nil:
		return err
	case refund != nil && refund.Status == store.RefundSucceeded:
		p.flash.Flash(r.Context(), "Booking cancelled: "+money.Format(refund.AmountMinor, refund.Currency)+" refunded.")
	default:
		p.flash.Flash(r.Context(), "Booking cancelled: the refund is on its way.")
	}
	http.Redirect(w, r, bookingURL(id), http.StatusSeeOther) // #nosec G710 -- a local path built from a parsed UUID
	return nil
}

// Page shows one of the buyer's bookings with its tickets.
func (p *Booking) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, ev, err := p.bookings.WithEvent(r, a)
	if err != nil {
		return err
	}
	d, err := p.details.Detail(r.Context(), a.Org, b.ID)
	if err != nil {
		return err
	}
	category := map[uuid.UUID]string{}
	for _, t := range d.Tickets {
		category[t.ID] = t.Category
	}
	out := views.Booking{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
		CancelReason: b.CancelReason, EventName: ev.Name, Venue: d.Venue, CreatedAt: b.CreatedAt,
		When: ticket.Event{StartsAt: d.StartsAt, TimeZone: d.TimeZone}.When(), CancelUntil: cancelUntil(b, ev)}
	for _, t := range b.Tickets {
		v := views.Ticket{ID: t.ID.String(), Label: cmp.Or(t.Place, "Seat "+t.Seat), Cancelled: t.Cancelled(),
			Category: category[t.ID], Price: money.Format(t.PriceMinor, t.Currency)}
		if !t.Cancelled() {
			code, err := p.codes.Code(r.Context(), ticket.Claims{Org: a.Org, Event: b.EventID, Ticket: t.ID, Seat: t.SeatID})
			if err != nil {
				return err
			}
			qr, err := ticket.NewQR(code)
			if err != nil {
				return err
			}
			v.Code, v.QR = code, qr.SVG()
			out.PDF = "/bookings/" + b.ID.String() + "/tickets.pdf"
		}
		out.Tickets = append(out.Tickets, v)
	}
	p.render.Render(w, r, http.StatusOK, views.BookingPage(p.render.Meta(r, "Booking"), out))
	return nil
}

// PDF answers the booking's live tickets as a PDF, a ticket a page.
func (p *Booking) PDF(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, _, err := p.bookings.WithEvent(r, a)
	if err != nil {
		return err
	}
	d, err := p.details.Detail(r.Context(), a.Org, b.ID)
	if err != nil {
		return err
	}
	tickets, err := ticket.FromDetail(r.Context(), p.codes, d)
	if err != nil {
		return err
	}
	if len(tickets.Tickets) == 0 {
		return errNoLiveTickets
	}
	doc, err := ticket.PDF(tickets)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/pdf")
	w.Header().Set("Content-Disposition", `attachment; filename="tickets-`+b.Reference+`.pdf"`)
	_, err = w.Write(doc)
	return err
}

// errNoLiveTickets answers a PDF asked of a booking whose every ticket
// was cancelled.
var errNoLiveTickets = apperr.E(apperr.NotFound, "this booking has no valid tickets left")

// MyBookings reads a buyer's own bookings; *store.Bookings satisfies it.
type MyBookings interface {
	OfUser(ctx context.Context, org, user uuid.UUID, limit int) ([]store.UserBooking, error)
}

// MyTickets is the buyer's list of their bookings.
type MyTickets struct {
	render Renderer
	mine   MyBookings
}

// Page lists the buyer's bookings, newest first.
func (p *MyTickets) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	bs, err := p.mine.OfUser(r.Context(), a.Org, a.User, 200)
	if err != nil {
		return err
	}
	rows := make([]views.MyBooking, len(bs))
	for i, b := range bs {
		rows[i] = views.MyBooking{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
			EventName: b.EventName, When: ticket.Event{StartsAt: b.StartsAt, TimeZone: b.TimeZone}.When(), Tickets: b.LiveTickets}
	}
	p.render.Render(w, r, http.StatusOK, views.MyTicketsPage(p.render.Meta(r, "My tickets"), rows))
	return nil
}
