package pages

import (
	"context"
	"net/http"
	"strconv"
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

// BookingDetails reads a booking as its page and its tickets show it, in
// one round trip; *store.BookingMail satisfies it.
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
	render  Renderer
	details BookingDetails
	codes   ticket.Signer
	cancels BuyerCancels
	flash   Flash
}

// cancelUntil is when the buyer's own cancellation of b closes, "" when
// they cannot cancel it (not paid online, nothing live, the event does
// not allow it, or past its cutoff).
func cancelUntil(b store.BookingDetail) string {
	if b.PaymentID == uuid.Nil || b.Status == store.BookingCancelled || b.BuyerCancelHours == nil {
		return ""
	}
	cutoff := b.StartsAt.Add(-time.Duration(*b.BuyerCancelHours) * time.Hour)
	if !time.Now().Before(cutoff) {
		return ""
	}
	return ticket.Event{StartsAt: cutoff, TimeZone: b.TimeZone}.When()
}

// cancelledBy says who last cancelled tickets of b, as the page words it:
// the buyer themselves, the box office (any other account), or "" when
// not known or never cancelled.
func cancelledBy(b store.BookingDetail) string {
	switch {
	case b.CancelReason == "" || b.CancelledBy == uuid.Nil:
		return ""
	case b.CancelledBy == b.User:
		return views.CancelledByBuyer
	default:
		return views.CancelledByStaff
	}
}

// mine reads the {booking} of the request's path, one of the buyer's own
// (another's is not found).
func (p *Booking) mine(r *http.Request, a hold.Actor) (store.BookingDetail, error) {
	id, err := httpx.PathID(r, "booking")
	if err != nil {
		return store.BookingDetail{}, err
	}
	d, err := p.details.Detail(r.Context(), a.Org, id)
	if err != nil {
		return d, err
	}
	if d.User != a.User {
		return store.BookingDetail{}, apperr.E(apperr.NotFound, "booking not found")
	}
	return d, nil
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
	d, err := p.mine(r, a)
	if err != nil {
		return err
	}
	out := views.Booking{ID: d.Booking.String(), Reference: store.FormatReference(d.Reference), Status: d.Status,
		CancelReason: d.CancelReason, CancelledBy: cancelledBy(d), EventName: d.EventName, Venue: d.Venue, CreatedAt: d.CreatedAt,
		When: ticket.Event{StartsAt: d.StartsAt, TimeZone: d.TimeZone}.When(), CancelUntil: cancelUntil(d)}
	for _, t := range d.Tickets {
		v := views.Ticket{ID: t.ID.String(), Label: ticketLabel(t), Cancelled: t.Cancelled,
			Category: t.Category, Price: money.Format(t.PriceMinor, t.Currency)}
		if !t.Cancelled {
			code, err := p.codes.Code(r.Context(), ticket.Claims{Org: a.Org, Event: d.Event, Ticket: t.ID, Seat: t.Seat})
			if err != nil {
				return err
			}
			qr, err := ticket.NewQR(code)
			if err != nil {
				return err
			}
			v.Code, v.QR = code, qr.SVG()
			out.PDF = "/bookings/" + d.Booking.String() + "/tickets.pdf"
		}
		out.Tickets = append(out.Tickets, v)
	}
	p.render.Render(w, r, http.StatusOK, views.BookingPage(p.render.Meta(r, "Booking"), out))
	return nil
}

// ticketLabel names a ticket's seat for people: "Seat B-A-12", or "G
// place 94" for a standing place.
func ticketLabel(t store.TicketDetail) string {
	if t.Standing {
		return store.PlaceLabel(t.SectionLabel, t.Number)
	}
	return "Seat " + t.SectionLabel + "-" + t.Row + "-" + strconv.Itoa(t.Number)
}

// PDF answers the booking's live tickets as a PDF, a ticket a page.
func (p *Booking) PDF(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	d, err := p.mine(r, a)
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
	w.Header().Set("Content-Disposition", `attachment; filename="tickets-`+d.Reference+`.pdf"`)
	// #nosec G705 -- a PDF rendered here, served as application/pdf for download, not markup
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
