package staff

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// The box office's counter pages: holding seats for a customer, selling
// them, the printable confirmation, cancelling, and house seats. Plain
// form posts that go back to a page with a message; refusals the staff
// can act on (a seat taken, a bad email) are that message, not an error
// page.

// CounterCore is what the counter asks of the hold core's box office;
// *hold.BoxOffice satisfies it.
type CounterCore interface {
	Sell(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (store.Booking, error)
	CreateHouseSeats(ctx context.Context, a hold.Actor, event uuid.UUID, name string, seatIDs []uuid.UUID) (store.HouseAllocation, error)
	ReleaseHouseSeats(ctx context.Context, a hold.Actor, id uuid.UUID) (store.HouseAllocation, error)
}

// Cancellations cancels bookings, refunding those paid online;
// *hold.Payments satisfies it.
type Cancellations interface {
	Cancel(ctx context.Context, a hold.Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, *store.Refund, error)
}

// Holder holds seats; *hold.Holds satisfies it.
type Holder interface {
	Hold(ctx context.Context, a hold.Actor, r hold.Request) (hold.Result, error)
}

// Labels names seats; *hold.Events satisfies it.
type Labels interface {
	SeatLabel(ctx context.Context, a hold.Actor, event, seat uuid.UUID) string
}

// BookingReads reads the booking a request names with its event;
// *query.Bookings satisfies it.
type BookingReads interface {
	WithEvent(r *http.Request, a hold.Actor) (store.Booking, store.Event, error)
}

// HouseReads reads a house-seat allocation; *store.Bookings satisfies it.
type HouseReads interface {
	HouseAllocation(ctx context.Context, org, id uuid.UUID) (store.HouseAllocation, error)
}

// Counter is the box office's counter: customer holds, sales,
// confirmations, cancellations and house seats.
type Counter struct {
	*frame
	core     CounterCore
	cancels  Cancellations
	holds    Holder
	seats    Labels
	bookings BookingReads
	houses   HouseReads
}

// refused goes back to the page with a refusal as its flash message;
// any other error is returned as is.
func (p *Counter) refused(w http.ResponseWriter, r *http.Request, back string, err error) error {
	msg, err := counterRefusal(err)
	if err != nil {
		return err
	}
	return p.backWith(w, r, back, msg)
}

// counterRefusal turns a refusal into the flash message; any other error
// is returned as is.
func counterRefusal(err error) (string, error) {
	e, ok := httpx.DomainError(err)
	if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound || e.Code == apperr.Forbidden {
		return "", err
	}
	if e.Code == apperr.IdempotencyMismatch {
		return "This form was sent already with other choices; its first seats are held. Reload the page to hold more.", nil
	}
	msg := e.Message
	for f, m := range e.Fields {
		msg += " (" + f + " " + m + ")"
	}
	return msg, nil
}

// CustomerHold holds the selected seats for a customer for the chosen
// number of hours.
func (p *Counter) CustomerHold(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := p.boxForm(w, r, a)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("seat_id", f.v["seat_id"])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return p.backWith(w, r, f.back, "Select the seats on the map first (choose “selects it” above the map).")
	}
	c, until, ok := customerForm(f.v)
	if !ok {
		return p.backWith(w, r, f.back, "Choose how long to hold the seats: at most 14 days.")
	}
	res, err := p.holds.Hold(r.Context(), a, hold.Request{Event: f.ev.ID, Seats: ids, Customer: &c, Until: until})
	return p.customerHeld(w, r, a, f.ev.ID, c, res, err)
}

// CustomerBest holds the best seats (as many as asked, of a category or
// section if chosen) for the customer named in the form.
func (p *Counter) CustomerBest(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := p.boxForm(w, r, a)
	if err != nil {
		return err
	}
	v := f.v
	n, err := strconv.Atoi(v.Get("count"))
	if err != nil || n < 1 {
		return p.backWith(w, r, f.back, "Say how many seats to choose.")
	}
	c, until, ok := customerForm(v)
	if !ok {
		return p.backWith(w, r, f.back, "Choose how long to hold the seats: at most 14 days.")
	}
	key := v.Get("key")
	if !httpx.ValidFormKey(key) {
		return p.backWith(w, r, f.back, httpx.MalformedFormKey)
	}
	// The customer is chosen for as a buyer is: seats held back for
	// accessible seating only when the customer needs it. The form's key
	// (one a rendering) makes a second submit answer with the first's
	// seats.
	res, err := p.holds.Hold(r.Context(), a, hold.Request{Event: f.ev.ID,
		Best:       &hold.Best{Count: n, Category: v.Get("category"), Section: v.Get("section")},
		Accessible: v.Get("accessible") == "on", Customer: &c, Until: until, Key: key})
	return p.customerHeld(w, r, a, f.ev.ID, c, res, err)
}

// customerForm reads the customer and the hours to hold for; false when
// the hours are not 1 to 14 days.
func customerForm(v url.Values) (store.Customer, time.Time, bool) {
	c := store.Customer{Name: v.Get("name"), Email: v.Get("email"), Note: v.Get("note")}
	hours, err := strconv.Atoi(v.Get("hours"))
	if err != nil || hours < 1 || hours > 14*24 {
		return c, time.Time{}, false
	}
	// To the minute: the same form sent twice names the same end, which
	// its key binds (CustomerBest).
	return c, time.Now().Add(time.Duration(hours) * time.Hour).Truncate(time.Minute), true
}

// customerHeld goes back to the box office saying which seats were held
// for the customer, or why none were.
func (p *Counter) customerHeld(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, c store.Customer, res hold.Result, err error) error {
	back := "/box-office/events/" + event.String()
	if err != nil {
		return p.refused(w, r, back, err)
	}
	labels := make([]string, len(res.Holds))
	for i, h := range res.Holds {
		labels[i] = p.seats.SeatLabel(r.Context(), a, event, h.SeatID)
	}
	return p.backWith(w, r, back, fmt.Sprintf("Held %s for %s until %s.", strings.Join(labels, ", "),
		strings.TrimSpace(c.Name), res.Holds[0].HeldUntil.UTC().Format("Mon 2 Jan 15:04 MST")))
}

// Sell sells the selected customer holds and shows the confirmation.
func (p *Counter) Sell(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := p.boxForm(w, r, a)
	if err != nil {
		return err
	}
	v := f.v
	back := f.back + holdFilter(v).Query()
	if len(v["hold_id"]) > releaseMax {
		return apperr.E(apperr.Invalid, "sell at most %d holds at once", releaseMax)
	}
	ids, err := httpx.BodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return p.backWith(w, r, back, "Select the customer's holds to sell first.")
	}
	b, err := p.core.Sell(r.Context(), a, f.ev.ID, v.Get("key"), ids, v.Get("payment_method"))
	if err != nil {
		return p.refused(w, r, back, err)
	}
	http.Redirect(w, r, "/box-office/bookings/"+b.ID.String(), http.StatusSeeOther) // #nosec G710 -- a local path with a UUID
	return nil
}

// Confirmation is a booking, printable for the customer.
func (p *Counter) Confirmation(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, ev, err := p.bookings.WithEvent(r, a)
	if err != nil {
		return err
	}
	c := views.Confirmation{ID: b.ID.String(), EventID: ev.ID.String(), Reference: store.FormatReference(b.Reference),
		Status: b.Status, EventName: ev.Name, Venue: ev.Venue, StartsAt: ev.StartsAt, Payment: b.PaymentMethod,
		Seller: b.UserEmail, Channel: b.Channel, CreatedAt: b.CreatedAt, CancelReason: b.CancelReason}
	if b.Customer != nil {
		c.Customer, c.Email, c.Note = b.Customer.Name, b.Customer.Email, b.Customer.Note
	} else {
		// An online booking: the buyer's account is the customer.
		c.Customer, c.Email, c.Seller = b.UserEmail, b.UserEmail, "online"
	}
	// The prices are those the tickets were sold at, whatever the event
	// charges now; cancelled tickets are not in the total.
	var total render.Sum
	for _, t := range b.Tickets {
		c.Tickets = append(c.Tickets, views.ConfirmationTicket{ID: t.ID.String(), Seat: t.Seat, Cancelled: t.Cancelled(),
			Price: money.Format(t.PriceMinor, t.Currency)})
		if !t.Cancelled() && t.Currency != "" {
			total.Add(t.PriceMinor, t.Currency)
		}
	}
	c.Total = total.String()
	p.page(w, r, ev, views.ConfirmationPage(p.render.Meta(r, "Booking "+c.Reference), c))
	return nil
}

// Cancel cancels the selected tickets (all when none is selected); a
// booking paid online is refunded their prices through the provider.
func (p *Counter) Cancel(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "booking")
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	tickets, err := httpx.BodyIDs("ticket_id", v["ticket_id"])
	if err != nil {
		return err
	}
	back := "/box-office/bookings/" + id.String()
	b, refund, err := p.cancels.Cancel(r.Context(), a, id, tickets, v.Get("reason"))
	if err != nil {
		return p.refused(w, r, back, err)
	}
	msg := "Booking cancelled; its seats are on sale again."
	if b.Status == store.BookingPartiallyCancelled {
		msg = "Tickets cancelled; their seats are on sale again."
	}
	return p.backWith(w, r, back, msg+refundNote(refund))
}

// CreateHouse keeps the selected blocked seats as named house seats.
func (p *Counter) CreateHouse(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := p.boxForm(w, r, a)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("seat_id", f.v["seat_id"])
	if err != nil {
		return err
	}
	h, err := p.core.CreateHouseSeats(r.Context(), a, f.ev.ID, f.v.Get("name"), ids)
	if err != nil {
		return p.refused(w, r, f.back, err)
	}
	return p.backWith(w, r, f.back, fmt.Sprintf("House seats %q: %s.", h.Name, strings.Join(h.Seats, ", ")))
}

// ReleaseHouse puts house seats on sale.
func (p *Counter) ReleaseHouse(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "allocation")
	if err != nil {
		return err
	}
	if _, err := httpx.Form(w, r); err != nil {
		return err
	}
	h, err := p.core.ReleaseHouseSeats(r.Context(), a, id)
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		cur, err := p.houses.HouseAllocation(r.Context(), a.Org, id)
		if err != nil {
			return err
		}
		return p.backWith(w, r, "/box-office/events/"+cur.EventID.String(), msg)
	}
	return p.backWith(w, r, "/box-office/events/"+h.EventID.String(),
		fmt.Sprintf("House seats %q are on sale: %s.", h.Name, strings.Join(h.Seats, ", ")))
}

// houseRows shows an event's house seats.
func houseRows(hs []store.HouseAllocation) []views.HouseRow {
	out := make([]views.HouseRow, len(hs))
	for i, h := range hs {
		out[i] = views.HouseRow{ID: h.ID.String(), Name: h.Name, Seats: h.Seats, Released: h.Released()}
	}
	return out
}

// bookingRows shows bookings found by a lookup.
func bookingRows(bs []store.Booking) []views.BookingRow {
	out := make([]views.BookingRow, len(bs))
	for i, b := range bs {
		who := b.UserEmail
		if b.Customer != nil {
			who = b.Customer.Name + " <" + b.Customer.Email + ">"
		}
		var seats []string
		for _, t := range b.Tickets {
			if !t.Cancelled() {
				seats = append(seats, t.Seat)
			}
		}
		out[i] = views.BookingRow{ID: b.ID.String(), Reference: store.FormatReference(b.Reference), Status: b.Status,
			Who: who, Seats: seats, CreatedAt: b.CreatedAt}
	}
	return out
}

// newSellKey is a fresh idempotency key for one rendering of the sale
// form.
func newSellKey() string { return "bo-" + uuid.NewString() }

// refundNote says what became of a cancellation's refund ("" for a
// booking not paid online).
func refundNote(r *store.Refund) string {
	if r == nil {
		return ""
	}
	amount := money.Format(r.AmountMinor, r.Currency)
	switch r.Status {
	case store.RefundSucceeded:
		return " " + amount + " refunded to the buyer."
	case store.RefundFailed, store.RefundCanceled:
		return " The refund of " + amount + " failed (" + r.FailureReason + "): retry it from Failed refunds."
	default:
		return " A refund of " + amount + " is on its way to the buyer."
	}
}
