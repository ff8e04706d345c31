package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
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

// customerHold holds the selected seats for a customer for the chosen
// number of hours.
func (s *staffPages) customerHold(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	back := "/box-office/events/" + ev.ID.String()
	ids, err := httpx.BodyIDs("seat_id", v["seat_id"])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return s.backWith(w, r, back, "Select the seats on the map first (choose “selects it” above the map).")
	}
	c, until, ok := customerForm(v)
	if !ok {
		return s.backWith(w, r, back, "Choose how long to hold the seats: at most 14 days.")
	}
	res, err := s.deps.Holds.Hold(r.Context(), a, hold.Request{Event: ev.ID, Seats: ids, Customer: &c, Until: until})
	return s.customerHeld(w, r, a, ev.ID, c, res, err)
}

// customerBest holds the best seats (as many as asked, of a category or
// section if chosen) for the customer named in the form.
func (s *staffPages) customerBest(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	back := "/box-office/events/" + ev.ID.String()
	n, err := strconv.Atoi(v.Get("count"))
	if err != nil || n < 1 {
		return s.backWith(w, r, back, "Say how many seats to choose.")
	}
	c, until, ok := customerForm(v)
	if !ok {
		return s.backWith(w, r, back, "Choose how long to hold the seats: at most 14 days.")
	}
	key := v.Get("key")
	if !httpx.ValidFormKey(key) {
		return s.backWith(w, r, back, httpx.MalformedFormKey)
	}
	// The customer is chosen for as a buyer is: seats held back for
	// accessible seating only when the customer needs it. The form's key
	// (one a rendering) makes a second submit answer with the first's
	// seats.
	res, err := s.deps.Holds.Hold(r.Context(), a, hold.Request{Event: ev.ID,
		Best:       &hold.Best{Count: n, Category: v.Get("category"), Section: v.Get("section")},
		Accessible: v.Get("accessible") == "on", Customer: &c, Until: until, Key: key})
	return s.customerHeld(w, r, a, ev.ID, c, res, err)
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
	// its key binds (customerBest).
	return c, time.Now().Add(time.Duration(hours) * time.Hour).Truncate(time.Minute), true
}

// customerHeld goes back to the box office saying which seats were held
// for the customer, or why none were.
func (s *staffPages) customerHeld(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, c store.Customer, res hold.Result, err error) error {
	back := "/box-office/events/" + event.String()
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		return s.backWith(w, r, back, msg)
	}
	labels := make([]string, len(res.Holds))
	for i, h := range res.Holds {
		labels[i] = s.deps.Events.SeatLabel(r.Context(), a, event, h.SeatID)
	}
	return s.backWith(w, r, back, fmt.Sprintf("Held %s for %s until %s.", strings.Join(labels, ", "),
		strings.TrimSpace(c.Name), res.Holds[0].HeldUntil.UTC().Format("Mon 2 Jan 15:04 MST")))
}

// sellHolds sells the selected customer holds and shows the confirmation.
func (s *staffPages) sellHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	back := "/box-office/events/" + ev.ID.String() + holdFilter(v).Query()
	if len(v["hold_id"]) > releaseMax {
		return apperr.E(apperr.Invalid, "sell at most %d holds at once", releaseMax)
	}
	ids, err := httpx.BodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return s.backWith(w, r, back, "Select the customer's holds to sell first.")
	}
	b, err := s.deps.BoxOffice.Sell(r.Context(), a, ev.ID, v.Get("key"), ids, v.Get("payment_method"))
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		return s.backWith(w, r, back, msg)
	}
	http.Redirect(w, r, "/box-office/bookings/"+b.ID.String(), http.StatusSeeOther) // #nosec G710 -- a local path with a UUID
	return nil
}

// confirmationPage is a booking, printable for the customer.
func (s *staffPages) confirmationPage(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	b, ev, err := s.bookings.WithEvent(r, a)
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
			Price: render.Price(t.PriceMinor, t.Currency)})
		if !t.Cancelled() && t.Currency != "" {
			total.Add(t.PriceMinor, t.Currency)
		}
	}
	c.Total = total.String()
	s.renderStaff(w, r, ev, views.ConfirmationPage(s.render.Meta(r, "Booking "+c.Reference), c))
	return nil
}

// cancelTickets cancels the selected tickets (all when none is selected).
func (s *staffPages) cancelTickets(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
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
	b, err := s.deps.BoxOffice.Cancel(r.Context(), a, id, tickets, v.Get("reason"))
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		return s.backWith(w, r, back, msg)
	}
	msg := "Booking cancelled; its seats are on sale again."
	if b.Status == store.BookingPartiallyCancelled {
		msg = "Tickets cancelled; their seats are on sale again."
	}
	return s.backWith(w, r, back, msg)
}

// createHouse keeps the selected blocked seats as named house seats.
func (s *staffPages) createHouse(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := s.staffEvent(r, a)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	back := "/box-office/events/" + ev.ID.String()
	ids, err := httpx.BodyIDs("seat_id", v["seat_id"])
	if err != nil {
		return err
	}
	h, err := s.deps.BoxOffice.CreateHouseSeats(r.Context(), a, ev.ID, v.Get("name"), ids)
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		return s.backWith(w, r, back, msg)
	}
	return s.backWith(w, r, back, fmt.Sprintf("House seats %q: %s.", h.Name, strings.Join(h.Seats, ", ")))
}

// releaseHouse puts house seats on sale.
func (s *staffPages) releaseHouse(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "allocation")
	if err != nil {
		return err
	}
	if _, err := httpx.Form(w, r); err != nil {
		return err
	}
	h, err := s.deps.BoxOffice.ReleaseHouseSeats(r.Context(), a, id)
	if err != nil {
		msg, err := counterRefusal(err)
		if err != nil {
			return err
		}
		cur, err := s.deps.Store.Bookings.HouseAllocation(r.Context(), a.Org, id)
		if err != nil {
			return err
		}
		return s.backWith(w, r, "/box-office/events/"+cur.EventID.String(), msg)
	}
	return s.backWith(w, r, "/box-office/events/"+h.EventID.String(),
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
